//! Claude Code's panel wire: stream-json over stdio, as `claudeCode.claudeProcessWrapper` runs
//! it (`<wrapper> <real-claude> --output-format stream-json --input-format stream-json …`).
