//! Engine unit tests: caller identification, the envelope, the delivery queue's locks, and the
//! send guards called on an in-process `Engine`.

mod answers;
mod caller;
mod envelope;
mod events;
mod guards;
mod panels;
mod records;
