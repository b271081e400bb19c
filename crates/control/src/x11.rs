//! The Linux X11 backend over x11rb (pure Rust, no libxcb). Windows come from the window
//! manager's EWMH properties (`_NET_CLIENT_LIST`, `_NET_WM_NAME`, `_NET_WM_PID`); focus is the
//! `_NET_ACTIVE_WINDOW` client message a pager sends, checked by reading `_NET_ACTIVE_WINDOW`
//! back; keys are XTEST fake input; idle time is the MIT-SCREEN-SAVER extension's
//! `ms_since_user_input`, which every real and XTEST input resets.
//!
//! Text goes through the CLIPBOARD selection, not typed key by key: a typed newline is the
//! chat input's Enter and would submit half a prompt, and a character the keyboard map lacks
//! (most of Unicode) cannot be typed at all. So [`X11::paste`] owns CLIPBOARD from a window of
//! its own, presses the paste keys, and answers the focused window's selection requests until
//! it has taken the text; then it gives the clipboard up. What the person had on the
//! clipboard is lost (their editor owned it); docs/desktop.md says so.

use std::time::{Duration, Instant};

use x11rb::connection::{Connection as _, RequestConnection as _};
use x11rb::protocol::Event;
use x11rb::protocol::screensaver::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{
    self, AtomEnum, ClientMessageEvent, ConnectionExt as _, CreateWindowAux, EventMask, PropMode,
    SelectionNotifyEvent, SelectionRequestEvent, WindowClass,
};
use x11rb::protocol::xtest::{self, ConnectionExt as _};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;
use x11rb::{COPY_DEPTH_FROM_PARENT, CURRENT_TIME, NONE};

use crate::error::{ControlError, Result};
use crate::keys::Chord;
use crate::{Control, Window};

/// How long focus may take to show in `_NET_ACTIVE_WINDOW`.
const FOCUS_WAIT: Duration = Duration::from_secs(2);
/// How long the focused window has to ask for the clipboard after the paste keys.
const PASTE_WAIT: Duration = Duration::from_secs(3);
/// The most text one paste carries: one `ChangeProperty`, no INCR transfer. A prompt is far
/// smaller; a larger one is refused by name rather than cut.
pub const MAX_PASTE_BYTES: usize = 256 * 1024;

x11rb::atom_manager! {
    /// The atoms this backend uses, interned once per connection.
    Atoms: AtomsCookie {
        _NET_CLIENT_LIST,
        _NET_ACTIVE_WINDOW,
        _NET_WM_NAME,
        _NET_WM_PID,
        _NET_SUPPORTING_WM_CHECK,
        UTF8_STRING,
        CLIPBOARD,
        TARGETS,
        TEXT,
    }
}

/// A connection to one X display.
pub struct X11 {
    conn: RustConnection,
    root: xproto::Window,
    atoms: Atoms,
    display: String,
}

impl std::fmt::Debug for X11 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X11")
            .field("display", &self.display)
            .finish()
    }
}

impl X11 {
    /// Connects to `display` (`:0`) and interns the atoms.
    pub fn connect(display: &str) -> Result<X11> {
        let (conn, screen) =
            RustConnection::connect(Some(display)).map_err(|e| ControlError::Connect {
                display: display.to_owned(),
                problem: e.to_string(),
            })?;
        let root = conn
            .setup()
            .roots
            .get(screen)
            .map(|s| s.root)
            .ok_or_else(|| ControlError::Connect {
                display: display.to_owned(),
                problem: format!("the server has no screen {screen}"),
            })?;
        let fail = |what: &'static str| {
            let display = display.to_owned();
            move |e: &dyn std::fmt::Display| ControlError::X11 {
                display,
                what,
                problem: e.to_string(),
            }
        };
        let atoms = Atoms::new(&conn)
            .map_err(|e| fail("intern its atoms")(&e))?
            .reply()
            .map_err(|e| fail("intern its atoms")(&e))?;
        Ok(X11 {
            conn,
            root,
            atoms,
            display: display.to_owned(),
        })
    }

    /// The display this talks to.
    pub fn display(&self) -> &str {
        &self.display
    }

    fn fail(&self, what: &'static str) -> impl Fn(&dyn std::fmt::Display) -> ControlError + '_ {
        move |e| ControlError::X11 {
            display: self.display.clone(),
            what,
            problem: e.to_string(),
        }
    }

    /// One 32-bit property list of `window`, empty when unset.
    fn cardinals(
        &self,
        window: xproto::Window,
        property: xproto::Atom,
        kind: impl Into<xproto::Atom>,
    ) -> Result<Vec<u32>> {
        let what = "read a window property";
        let reply = self
            .conn
            .get_property(false, window, property, kind, 0, 4096)
            .map_err(|e| self.fail(what)(&e))?
            .reply()
            .map_err(|e| self.fail(what)(&e))?;
        Ok(reply.value32().map(Iterator::collect).unwrap_or_default())
    }

    /// A text property (`_NET_WM_NAME` as UTF-8, else `WM_NAME`), lossy on bad bytes.
    fn title(&self, window: xproto::Window) -> Result<String> {
        let what = "read a window title";
        for (property, kind) in [
            (self.atoms._NET_WM_NAME, self.atoms.UTF8_STRING),
            (AtomEnum::WM_NAME.into(), AtomEnum::ANY.into()),
        ] {
            let reply = self
                .conn
                .get_property(false, window, property, kind, 0, 1024)
                .map_err(|e| self.fail(what)(&e))?
                .reply()
                .map_err(|e| self.fail(what)(&e))?;
            if !reply.value.is_empty() {
                return Ok(String::from_utf8_lossy(&reply.value).into_owned());
            }
        }
        Ok(String::new())
    }

    fn window(&self, id: xproto::Window) -> Result<Window> {
        Ok(Window {
            id: u64::from(id),
            title: self.title(id)?,
            pid: self
                .cardinals(id, self.atoms._NET_WM_PID, AtomEnum::CARDINAL)?
                .first()
                .copied(),
        })
    }

    fn require_extension(&self, extension: &'static str, what: &'static str) -> Result<()> {
        let present = self
            .conn
            .extension_information(extension)
            .map_err(|e| self.fail(what)(&e))?
            .is_some();
        if present {
            Ok(())
        } else {
            Err(ControlError::MissingExtension {
                display: self.display.clone(),
                extension,
                what,
            })
        }
    }

    /// The keycode that produces `keysym` without a modifier, from the server's keyboard map.
    fn keycode(&self, keysym: u32) -> Result<u8> {
        let what = "read the keyboard map";
        let setup = self.conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let map = self
            .conn
            .get_keyboard_mapping(min, max - min + 1)
            .map_err(|e| self.fail(what)(&e))?
            .reply()
            .map_err(|e| self.fail(what)(&e))?;
        let per = usize::from(map.keysyms_per_keycode.max(1));
        map.keysyms
            .chunks(per)
            .position(|syms| syms.first() == Some(&keysym))
            .and_then(|i| u8::try_from(usize::from(min) + i).ok())
            .ok_or_else(|| ControlError::NoKey {
                display: self.display.clone(),
                key: crate::keys::name_of(keysym)
                    .map(str::to_owned)
                    .or_else(|| char::from_u32(keysym).map(String::from))
                    .unwrap_or_default(),
                keysym,
            })
    }

    fn fake_key(&self, keycode: u8, press: bool) -> Result<()> {
        let kind = if press {
            xproto::KEY_PRESS_EVENT
        } else {
            xproto::KEY_RELEASE_EVENT
        };
        self.conn
            .xtest_fake_input(kind, keycode, CURRENT_TIME, NONE, 0, 0, 0)
            .map_err(|e| self.fail("send a key")(&e))?;
        Ok(())
    }

    /// Waits until the server processed everything sent so far.
    fn sync(&self) -> Result<()> {
        self.conn
            .sync()
            .map_err(|e| self.fail("finish its requests")(&e))
    }

    /// Answers one selection request for the clipboard this connection owns; true when it
    /// handed over the text (not just the list of targets).
    fn serve(&self, request: &SelectionRequestEvent, text: &str) -> Result<bool> {
        let what = "answer a clipboard request";
        let atoms = &self.atoms;
        // An obsolete requestor names no property: the target is the property then (ICCCM).
        let property = if request.property == NONE {
            request.target
        } else {
            request.property
        };
        let string: xproto::Atom = AtomEnum::STRING.into();
        let (answered, gave_text) = if request.selection != atoms.CLIPBOARD {
            (NONE, false)
        } else if request.target == atoms.TARGETS {
            self.conn
                .change_property32(
                    PropMode::REPLACE,
                    request.requestor,
                    property,
                    AtomEnum::ATOM,
                    &[atoms.TARGETS, atoms.UTF8_STRING, atoms.TEXT, string],
                )
                .map_err(|e| self.fail(what)(&e))?;
            (property, false)
        } else if request.target == atoms.UTF8_STRING || request.target == atoms.TEXT {
            self.conn
                .change_property8(
                    PropMode::REPLACE,
                    request.requestor,
                    property,
                    atoms.UTF8_STRING,
                    text.as_bytes(),
                )
                .map_err(|e| self.fail(what)(&e))?;
            (property, true)
        } else if request.target == string {
            // STRING is Latin-1: what it cannot carry becomes `?`.
            let latin1: Vec<u8> = text
                .chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                .collect();
            self.conn
                .change_property8(
                    PropMode::REPLACE,
                    request.requestor,
                    property,
                    string,
                    &latin1,
                )
                .map_err(|e| self.fail(what)(&e))?;
            (property, true)
        } else {
            (NONE, false)
        };
        let notify = SelectionNotifyEvent {
            response_type: xproto::SELECTION_NOTIFY_EVENT,
            sequence: 0,
            time: request.time,
            requestor: request.requestor,
            selection: request.selection,
            target: request.target,
            property: answered,
        };
        self.conn
            .send_event(false, request.requestor, EventMask::NO_EVENT, notify)
            .map_err(|e| self.fail(what)(&e))?;
        self.conn.flush().map_err(|e| self.fail(what)(&e))?;
        Ok(gave_text)
    }

    /// Owns the clipboard from `owner`, presses `paste`, and serves requests until the text was
    /// taken or [`PASTE_WAIT`] passed.
    fn paste_from(&self, owner: xproto::Window, text: &str, paste: &Chord) -> Result<()> {
        let what = "take the clipboard";
        let atoms = &self.atoms;
        self.conn
            .set_selection_owner(owner, atoms.CLIPBOARD, CURRENT_TIME)
            .map_err(|e| self.fail(what)(&e))?;
        let now_owner = self
            .conn
            .get_selection_owner(atoms.CLIPBOARD)
            .map_err(|e| self.fail(what)(&e))?
            .reply()
            .map_err(|e| self.fail(what)(&e))?
            .owner;
        if now_owner != owner {
            return Err(ControlError::ClipboardLost {
                when: "as it was being taken",
            });
        }
        self.press(paste)?;
        let started = Instant::now();
        while started.elapsed() < PASTE_WAIT {
            let event = self
                .conn
                .poll_for_event()
                .map_err(|e| self.fail("wait for the clipboard request")(&e))?;
            match event {
                Some(Event::SelectionRequest(request)) => {
                    if self.serve(&request, text)? {
                        return Ok(());
                    }
                }
                Some(Event::SelectionClear(clear)) if clear.selection == atoms.CLIPBOARD => {
                    return Err(ControlError::ClipboardLost {
                        when: "before the window asked for the text",
                    });
                }
                Some(_) => {}
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        Err(ControlError::PasteNotTaken {
            chord: paste.to_string(),
            waited_ms: millis(PASTE_WAIT),
        })
    }
}

impl Control for X11 {
    fn name(&self) -> &'static str {
        "x11"
    }

    fn windows(&self) -> Result<Vec<Window>> {
        let ids = self.cardinals(self.root, self.atoms._NET_CLIENT_LIST, AtomEnum::WINDOW)?;
        // A window closed between the list and its properties is skipped, not an error.
        Ok(ids
            .into_iter()
            .filter_map(|id| self.window(id).ok())
            .collect())
    }

    fn active(&self) -> Result<Option<u64>> {
        Ok(self
            .cardinals(self.root, self.atoms._NET_ACTIVE_WINDOW, AtomEnum::WINDOW)?
            .first()
            .copied()
            .filter(|id| *id != NONE)
            .map(u64::from))
    }

    fn focus(&self, window: &Window) -> Result<()> {
        let what = "ask the window manager to raise a window";
        let wm = self.cardinals(
            self.root,
            self.atoms._NET_SUPPORTING_WM_CHECK,
            AtomEnum::WINDOW,
        )?;
        if wm.is_empty() {
            return Err(ControlError::NoWindowManager {
                display: self.display.clone(),
            });
        }
        let id = u32::try_from(window.id).map_err(|_| ControlError::X11 {
            display: self.display.clone(),
            what,
            problem: format!("{:#x} is not an X11 window id", window.id),
        })?;
        let current = self.active()?.and_then(|a| u32::try_from(a).ok());
        // Source 2 ("pager"): the request comes for the person, as a taskbar's click does;
        // window managers apply focus-stealing prevention to source 1 (applications).
        let message = ClientMessageEvent::new(
            32,
            id,
            self.atoms._NET_ACTIVE_WINDOW,
            [2, CURRENT_TIME, current.unwrap_or(NONE), 0, 0],
        );
        self.conn
            .send_event(
                false,
                self.root,
                EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                message,
            )
            .map_err(|e| self.fail(what)(&e))?;
        self.conn.flush().map_err(|e| self.fail(what)(&e))?;
        let started = Instant::now();
        loop {
            let active = self.active()?;
            if active == Some(window.id) {
                return Ok(());
            }
            if started.elapsed() >= FOCUS_WAIT {
                return Err(ControlError::FocusNotTaken {
                    id: window.id,
                    title: window.title.clone(),
                    active: match active {
                        Some(a) => format!("{a:#x}"),
                        None => "no window".to_owned(),
                    },
                    waited_ms: millis(FOCUS_WAIT),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn idle(&self) -> Result<Duration> {
        let what = "tell the time since the last input";
        self.require_extension(screensaver::X11_EXTENSION_NAME, what)?;
        let info = self
            .conn
            .screensaver_query_info(self.root)
            .map_err(|e| self.fail(what)(&e))?
            .reply()
            .map_err(|e| self.fail(what)(&e))?;
        Ok(Duration::from_millis(u64::from(info.ms_since_user_input)))
    }

    fn press(&self, chord: &Chord) -> Result<()> {
        self.require_extension(xtest::X11_EXTENSION_NAME, "press keys")?;
        let modifiers = chord
            .modifiers
            .iter()
            .map(|sym| self.keycode(*sym))
            .collect::<Result<Vec<u8>>>()?;
        let key = self.keycode(chord.key)?;
        for code in &modifiers {
            self.fake_key(*code, true)?;
        }
        self.fake_key(key, true)?;
        self.fake_key(key, false)?;
        for code in modifiers.iter().rev() {
            self.fake_key(*code, false)?;
        }
        self.sync()
    }

    fn paste(&self, text: &str, paste: &Chord) -> Result<()> {
        let limit = MAX_PASTE_BYTES.min(self.conn.maximum_request_bytes().saturating_sub(64));
        if text.len() > limit {
            return Err(ControlError::TooLong {
                bytes: text.len(),
                limit,
            });
        }
        let what = "make its clipboard window";
        let owner = self.conn.generate_id().map_err(|e| self.fail(what)(&e))?;
        self.conn
            .create_window(
                COPY_DEPTH_FROM_PARENT,
                owner,
                self.root,
                0,
                0,
                1,
                1,
                0,
                WindowClass::INPUT_ONLY,
                0,
                &CreateWindowAux::new(),
            )
            .map_err(|e| self.fail(what)(&e))?;
        let result = self.paste_from(owner, text, paste);
        // Give the clipboard up (only if still ours) and drop the window, whatever happened:
        // a clipboard owned by a connection about to close would just be emptied.
        let still_ours = self
            .conn
            .get_selection_owner(self.atoms.CLIPBOARD)
            .ok()
            .and_then(|cookie| cookie.reply().ok())
            .is_some_and(|r| r.owner == owner);
        if still_ours {
            let _ = self
                .conn
                .set_selection_owner(NONE, self.atoms.CLIPBOARD, CURRENT_TIME);
        }
        let _ = self.conn.destroy_window(owner);
        let _ = self.conn.flush();
        result
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
