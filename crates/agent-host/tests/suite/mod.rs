mod common;
mod connect;
mod deliver;
mod hostile;
mod input;
mod listing;
mod pool;
