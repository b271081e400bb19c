mod daemon;
mod database;
mod decisions;
mod escaping;
mod home_safety;
mod install;
mod install_real;
mod sessions;
