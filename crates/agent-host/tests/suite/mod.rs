mod common;
mod connect;
mod deliver;
mod hostile;
mod listing;
