mod brief;
mod deliver;
mod receipt;
