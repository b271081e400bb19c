mod endpoint;
mod real_claude;
mod real_codex;
mod real_support;
