mod daemon;
mod database;
mod decisions;
mod sessions;
