//! The per-user daemon: process lifecycle, the RPC server, autostart and watchers. Everything
//! stateful lives behind it. Filled in by the messaging issue.
