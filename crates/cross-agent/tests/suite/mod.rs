mod daemon;
mod database;
mod decisions;
mod escaping;
mod handoff;
mod home_safety;
mod sessions;
