//! Live windows.
