//! `x11-recorder --title TITLE --record FILE [--pid PID]`: a real X11 client standing in for an
//! editor window. It sets its title as VS Code does (`_NET_WM_NAME` in UTF-8 and `WM_NAME`) and
//! `_NET_WM_PID` (its own pid unless given), and appends one JSON line to FILE for what it
//! receives: `{"focus_in":true}`, `{"key":SYM,"state":MASK}` for each key press (the key sym of
//! the pressed key's first column), and — as an editor's text input does on Ctrl+V — asks for
//! the CLIPBOARD as UTF-8 and records `{"paste":TEXT}` (or `{"paste_failed":true}`).

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use serde_json::json;
use x11rb::connection::Connection as _;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, KeyButMask, PropMode, WindowClass,
};
use x11rb::wrapper::ConnectionExt as _;
use x11rb::{COPY_DEPTH_FROM_PARENT, NONE};

#[derive(Parser)]
struct Args {
    #[arg(long)]
    title: String,
    #[arg(long)]
    record: PathBuf,
    #[arg(long)]
    pid: Option<u32>,
}

x11rb::atom_manager! {
    Atoms: AtomsCookie {
        _NET_WM_NAME,
        _NET_WM_PID,
        UTF8_STRING,
        CLIPBOARD,
        XA_RECORDER_PASTE,
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut record = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.record)
        .with_context(|| format!("open {}", args.record.display()))?;
    let mut write = |value: serde_json::Value| -> Result<()> {
        writeln!(record, "{value}")?;
        record.flush()?;
        Ok(())
    };
    let (conn, screen) = x11rb::connect(None).context("connect to DISPLAY")?;
    let root = conn.setup().roots[screen].root;
    let atoms = Atoms::new(&conn)?.reply()?;
    let (min, max) = (conn.setup().min_keycode, conn.setup().max_keycode);
    let map = conn.get_keyboard_mapping(min, max - min + 1)?.reply()?;
    let per = usize::from(map.keysyms_per_keycode.max(1));

    let window = conn.generate_id()?;
    conn.create_window(
        COPY_DEPTH_FROM_PARENT,
        window,
        root,
        0,
        0,
        320,
        200,
        0,
        WindowClass::INPUT_OUTPUT,
        0,
        &CreateWindowAux::new()
            .background_pixel(conn.setup().roots[screen].white_pixel)
            .event_mask(EventMask::KEY_PRESS | EventMask::FOCUS_CHANGE),
    )?;
    conn.change_property8(
        PropMode::REPLACE,
        window,
        atoms._NET_WM_NAME,
        atoms.UTF8_STRING,
        args.title.as_bytes(),
    )?;
    conn.change_property8(
        PropMode::REPLACE,
        window,
        AtomEnum::WM_NAME,
        AtomEnum::STRING,
        args.title.as_bytes(),
    )?;
    conn.change_property32(
        PropMode::REPLACE,
        window,
        atoms._NET_WM_PID,
        AtomEnum::CARDINAL,
        &[args.pid.unwrap_or(std::process::id())],
    )?;
    // WM_HINTS with input = true: the window takes the keyboard focus when activated.
    conn.change_property32(
        PropMode::REPLACE,
        window,
        AtomEnum::WM_HINTS,
        AtomEnum::WM_HINTS,
        &[1, 1, 0, 0, 0, 0, 0, 0, 0],
    )?;
    conn.change_property8(
        PropMode::REPLACE,
        window,
        AtomEnum::WM_CLASS,
        AtomEnum::STRING,
        b"code\0Code\0",
    )?;
    conn.map_window(window)?;
    conn.flush()?;

    loop {
        match conn.wait_for_event()? {
            Event::FocusIn(_) => write(json!({"focus_in": true}))?,
            Event::KeyPress(key) => {
                let index = usize::from(key.detail.saturating_sub(min)) * per;
                let sym = map.keysyms.get(index).copied().unwrap_or(0);
                write(json!({"key": sym, "state": u16::from(key.state)}))?;
                let ctrl = u16::from(key.state) & u16::from(KeyButMask::CONTROL) != 0;
                if ctrl && sym == u32::from('v') {
                    conn.convert_selection(
                        window,
                        atoms.CLIPBOARD,
                        atoms.UTF8_STRING,
                        atoms.XA_RECORDER_PASTE,
                        key.time,
                    )?;
                    conn.flush()?;
                }
            }
            Event::SelectionNotify(notify) => {
                if notify.property == NONE {
                    write(json!({"paste_failed": true}))?;
                } else {
                    let reply = conn
                        .get_property(true, window, notify.property, AtomEnum::ANY, 0, 1 << 20)?
                        .reply()?;
                    write(json!({"paste": String::from_utf8_lossy(&reply.value)}))?;
                }
            }
            _ => {}
        }
    }
}
