mod bad_input;
mod claude;
mod codex;
mod grok;
mod properties;
mod reader_support;
mod turns;
