mod daemon;
mod decisions;
mod home_safety;
mod sessions;
