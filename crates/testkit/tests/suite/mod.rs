mod endpoint;
mod fixtures;
mod real_claude;
mod real_codex;
mod real_support;
mod telegram;
