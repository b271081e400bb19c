mod daemon;
mod decisions;
mod escaping;
mod sessions;
