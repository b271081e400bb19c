//! Grok Build's panel wire: ACP (JSON-RPC 2.0) over `grok agent [--reasoning-effort L] stdio`,
//! as `grok.cliPath` runs it.
