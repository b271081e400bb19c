//! The shim's tests: the real `cross-agent` binary as the shim, the real Claude Code behind it
//! against the scripted model endpoint, and the test as the VS Code extension.

mod suite;
