//! The crate's one error type: every refusal and failure of the control backend, worded so a
//! person can act on it (which display, which window, which key, which file).

use std::path::PathBuf;

/// What went wrong controlling the desktop.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// Neither X11 nor Wayland is there (a server, an SSH session without forwarding).
    #[error("no desktop to control: {why}")]
    NoDesktop { why: String },
    /// The backend in use cannot do this at all (Wayland without X11).
    #[error("{backend} cannot {what}: {why}")]
    Unsupported {
        backend: &'static str,
        what: &'static str,
        why: String,
    },
    /// The X server could not be reached.
    #[error("cannot connect to the X display {display:?}: {problem}")]
    Connect { display: String, problem: String },
    /// A request to a reached X server failed.
    #[error("the X server on {display:?} failed to {what}: {problem}")]
    X11 {
        display: String,
        what: &'static str,
        problem: String,
    },
    /// An extension the call needs is not offered by the server.
    #[error("the X server on {display:?} has no {extension} extension, needed to {what}")]
    MissingExtension {
        display: String,
        extension: &'static str,
        what: &'static str,
    },
    /// Focus by EWMH needs a window manager that publishes `_NET_SUPPORTING_WM_CHECK`.
    #[error(
        "no EWMH window manager runs on the X display {display:?} (no _NET_SUPPORTING_WM_CHECK \
         on the root window), so no window can be raised"
    )]
    NoWindowManager { display: String },
    /// The window manager did not make the window active.
    #[error(
        "window {id:#x} ({title:?}) was asked to come to the front but {active} is still the \
         active window after {waited_ms} ms (the window manager refused or is busy)"
    )]
    FocusNotTaken {
        id: u64,
        title: String,
        active: String,
        waited_ms: u64,
    },
    /// A key chord in the settings could not be read.
    #[error("the key chord {chord:?} is not understood: {problem}")]
    BadChord { chord: String, problem: String },
    /// No key of the keyboard map produces a key sym the chord needs.
    #[error("no key on the X display {display:?} produces {key:?} (keysym {keysym:#x})")]
    NoKey {
        display: String,
        key: String,
        keysym: u32,
    },
    /// The text is too large for one clipboard transfer.
    #[error(
        "the text is {bytes} bytes; the clipboard paste carries at most {limit} bytes in one \
         transfer"
    )]
    TooLong { bytes: usize, limit: usize },
    /// Someone else owns the clipboard, or took it back before the paste.
    #[error("the clipboard was taken by another program {when}, so nothing was pasted")]
    ClipboardLost { when: &'static str },
    /// The focused window never asked for the clipboard after the paste keys.
    #[error(
        "the paste keys ({chord}) were pressed but no window asked for the clipboard within \
         {waited_ms} ms: the chat input was probably not focused"
    )]
    PasteNotTaken { chord: String, waited_ms: u64 },
    /// No editor window holds the folder.
    #[error(
        "no editor window has {folder:?} in its title{seen}: open the folder in VS Code (or \
         another editor) first"
    )]
    NoWindow { folder: String, seen: String },
    /// More than one editor window could be the session's.
    #[error(
        "{count} editor windows could be the one for {folder:?} ({windows}); close one or rename \
         the folder"
    )]
    AmbiguousWindow {
        folder: String,
        count: usize,
        windows: String,
    },
    /// The editor's CLI is not there or failed.
    #[error("the editor CLI {program:?} {problem}")]
    EditorCli { program: String, problem: String },
    /// `[control]` of `config.toml` is unreadable, wrong or unsafe.
    #[error("{path}: {problem}. {fix}", path = path.display())]
    Settings {
        path: PathBuf,
        problem: String,
        fix: String,
    },
    /// An I/O error on a named file.
    #[error("{path}: {source}", path = path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The home's own checks refused a file.
    #[error(transparent)]
    Home(#[from] cross_agent_home::Error),
}

/// The crate's result.
pub type Result<T, E = ControlError> = std::result::Result<T, E>;
