//! The Codex and Grok adapters driving real agent processes: the real Codex 0.171.0
//! `app-server` against the scripted model endpoint, and `fake-grok` (testkit) for Grok. A test
//! plays the VS Code extension; [`pump::Pump`] stands where the shim's runtime will, feeding the
//! adapter whole lines both ways and carrying out what it says.

mod codex_panel;
mod grok_panel;
mod pump;
mod through_shim;
