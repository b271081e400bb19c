//! Codex's panel wire: `codex app-server` JSON-RPC over stdio, as `chatgpt.cliExecutable` runs it.
