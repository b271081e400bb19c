mod brief;
mod receipt;
