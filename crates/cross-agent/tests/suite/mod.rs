mod daemon;
mod database;
mod decisions;
mod escaping;
mod home_safety;
mod sessions;
mod telegram;
