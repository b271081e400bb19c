mod common;
mod fail_open;
mod injection;
mod passthrough;
