//! Engine unit tests: caller identification, the envelope, and the delivery queue's locks.

mod answers;
mod caller;
mod envelope;
mod records;
