mod daemon;
mod sessions;
