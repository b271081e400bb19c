mod daemon;
mod decisions;
mod sessions;
