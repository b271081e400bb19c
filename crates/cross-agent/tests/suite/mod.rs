mod daemon;
mod decisions;
mod escaping;
mod home_safety;
mod sessions;
