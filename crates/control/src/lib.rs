//! The desktop control backend (docs/desktop.md "Focus and GUI fallback"; spec
//! `relay-control`): list the editor windows, raise the one a session lives in, and — only when
//! the person turned it on and is away from the keyboard — paste a prompt into an agent's chat
//! input through the GUI. It sits beside `transports` in docs/architecture.md: a door of last
//! resort for a session no shim, native door or headless CLI can reach.
//!
//! - [`Control`]: what every backend offers. [`x11::X11`] is the Linux one (x11rb: EWMH
//!   properties and `_NET_ACTIVE_WINDOW`, XTEST keys, MIT-SCREEN-SAVER idle time);
//!   [`WaylandOnly`] says for every call what Wayland does not let a program do. macOS
//!   (Accessibility) and Windows (Win32) backends are one more implementation each.
//! - [`matching`]: which window is a session's, from its working directory (shared with
//!   `cross-agent windows`).
//! - [`editor_cli`]: `code --reuse-window <folder>`, the portable way to raise a window.
//! - [`focus`]: the one focus path the CLI and the daemon use.
//! - [`settings`]: `[control]` of `config.toml` and `CROSS_AGENT_GUI_FALLBACK`.
//! - [`fallback`]: the GUI fallback, each outcome and refusal a decision line.
//! - [`keys`]: key chords (`ctrl+Escape`) and the key syms they name.

pub mod editor_cli;
mod error;
pub mod fallback;
pub mod focus;
pub mod keys;
pub mod matching;
pub mod settings;
pub mod x11;

use std::time::Duration;

use serde::Serialize;

pub use error::{ControlError, Result};
pub use keys::Chord;

/// A top-level window as the window manager lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Window {
    /// The backend's id (an X11 window id).
    pub id: u64,
    /// The title the application set (`_NET_WM_NAME`, else `WM_NAME`); empty when none.
    pub title: String,
    /// The process that says it owns the window (`_NET_WM_PID`), when it says.
    pub pid: Option<u32>,
}

impl Window {
    /// `0x1a00003 "main.rs — alpha — Visual Studio Code"`, for messages and decision lines.
    pub fn describe(&self) -> String {
        format!("{:#x} {:?}", self.id, self.title)
    }
}

/// What a desktop backend can do. Each call either does it or says why it cannot; nothing is
/// pretended.
pub trait Control {
    /// The backend's name in messages and decision lines (`x11`, `wayland`).
    fn name(&self) -> &'static str;
    /// The application windows the window manager manages, in its order.
    fn windows(&self) -> Result<Vec<Window>>;
    /// The window in front, when one is.
    fn active(&self) -> Result<Option<u64>>;
    /// Brings `window` to the front with the keyboard focus, and checks that it got there.
    fn focus(&self, window: &Window) -> Result<()>;
    /// How long since the last keyboard or mouse input.
    fn idle(&self) -> Result<Duration>;
    /// Presses and releases a chord in the focused window.
    fn press(&self, chord: &Chord) -> Result<()>;
    /// Puts `text` on the clipboard, presses `paste` in the focused window, and serves the text
    /// until it was taken.
    fn paste(&self, text: &str, paste: &Chord) -> Result<()>;
}

/// The backend this session's environment offers: X11 when `DISPLAY` is set (XWayland
/// included), [`WaylandOnly`] when only `WAYLAND_DISPLAY` is.
pub fn from_env() -> Result<Box<dyn Control>> {
    let display = std::env::var("DISPLAY").ok().filter(|d| !d.is_empty());
    let wayland = std::env::var("WAYLAND_DISPLAY")
        .ok()
        .filter(|d| !d.is_empty());
    match (display, wayland) {
        (Some(display), _) => Ok(Box::new(x11::X11::connect(&display)?)),
        (None, Some(wayland)) => Ok(Box::new(WaylandOnly { display: wayland })),
        (None, None) => Err(ControlError::NoDesktop {
            why: "neither DISPLAY nor WAYLAND_DISPLAY is set (no graphical session here)"
                .to_owned(),
        }),
    }
}

/// Runs `f` with the backend [`from_env`] gives, or with the reason there is none as it came
/// (already worded: "no desktop to control: …", "cannot connect to the X display …"), so the
/// message says it once. The backend is boxed and the callers borrow it, hence a closure.
pub fn with_env<T>(f: impl FnOnce(Result<&dyn Control>) -> T) -> T {
    match from_env() {
        Ok(backend) => f(Ok(backend.as_ref())),
        Err(none) => f(Err(none)),
    }
}

/// A Wayland session without X11: Wayland gives no program a list of other programs' windows,
/// a way to raise one, synthetic keys or the idle time, so every call says so.
#[derive(Debug)]
pub struct WaylandOnly {
    /// `WAYLAND_DISPLAY`, named in messages.
    pub display: String,
}

impl WaylandOnly {
    fn cannot<T>(&self, what: &'static str) -> Result<T> {
        Err(ControlError::Unsupported {
            backend: "Wayland",
            what,
            why: format!(
                "the compositor on {:?} lets no program see or drive other programs' windows; \
                 run the editor under XWayland (DISPLAY set) for focus by window, or use the \
                 editor CLI (`code --reuse-window FOLDER`) to raise it",
                self.display
            ),
        })
    }
}

impl Control for WaylandOnly {
    fn name(&self) -> &'static str {
        "wayland"
    }
    fn windows(&self) -> Result<Vec<Window>> {
        self.cannot("list windows")
    }
    fn active(&self) -> Result<Option<u64>> {
        self.cannot("tell the active window")
    }
    fn focus(&self, _window: &Window) -> Result<()> {
        self.cannot("raise a window")
    }
    fn idle(&self) -> Result<Duration> {
        self.cannot("tell how long the person has been idle")
    }
    fn press(&self, _chord: &Chord) -> Result<()> {
        self.cannot("press keys in another program")
    }
    fn paste(&self, _text: &str, _paste: &Chord) -> Result<()> {
        self.cannot("paste into another program")
    }
}
