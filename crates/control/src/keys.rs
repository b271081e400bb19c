//! Key chords as the settings spell them (`ctrl+Escape`, `ctrl+shift+i`, `Return`) and the X11
//! key syms they name. Only the keys an editor keybinding uses are known: letters, digits,
//! function keys and the named keys below; text itself is pasted, never typed (see
//! [`crate::Control::paste`]).

use std::fmt;

use crate::error::{ControlError, Result};

/// Named keys and their X11 key syms (X11's `keysymdef.h`).
const NAMED: &[(&str, u32)] = &[
    ("Return", 0xff0d),
    ("Enter", 0xff0d),
    ("Escape", 0xff1b),
    ("Esc", 0xff1b),
    ("Tab", 0xff09),
    ("BackSpace", 0xff08),
    ("Delete", 0xffff),
    ("space", 0x20),
    ("Home", 0xff50),
    ("End", 0xff57),
    ("Left", 0xff51),
    ("Up", 0xff52),
    ("Right", 0xff53),
    ("Down", 0xff54),
    ("comma", 0x2c),
    ("period", 0x2e),
    ("slash", 0x2f),
    ("semicolon", 0x3b),
    ("backslash", 0x5c),
    ("grave", 0x60),
];

/// The modifier keys a chord may hold, with the left key's sym.
const MODIFIERS: &[(&str, u32)] = &[
    ("ctrl", 0xffe3),
    ("control", 0xffe3),
    ("shift", 0xffe1),
    ("alt", 0xffe9),
    ("super", 0xffeb),
    ("meta", 0xffeb),
];

/// `Control_L`, `Shift_L`, … and the other keys' names, for reading a recorded key back.
pub fn name_of(keysym: u32) -> Option<&'static str> {
    const MODIFIER_NAMES: &[(&str, u32)] = &[
        ("Control_L", 0xffe3),
        ("Control_R", 0xffe4),
        ("Shift_L", 0xffe1),
        ("Shift_R", 0xffe2),
        ("Alt_L", 0xffe9),
        ("Super_L", 0xffeb),
    ];
    NAMED
        .iter()
        .chain(MODIFIER_NAMES)
        .find(|(_, sym)| *sym == keysym)
        .map(|(name, _)| *name)
}

/// Modifiers held while one key is pressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chord {
    /// The modifiers' key syms, pressed in this order and released in reverse.
    pub modifiers: Vec<u32>,
    /// The key's sym.
    pub key: u32,
    /// As written, for messages.
    pub text: String,
}

impl Chord {
    /// Reads `ctrl+shift+Escape`: modifiers (`ctrl`, `shift`, `alt`, `super`) then one key, joined
    /// by `+`, modifiers in any case.
    pub fn parse(text: &str) -> Result<Chord> {
        let bad = |problem: String| ControlError::BadChord {
            chord: text.to_owned(),
            problem,
        };
        let parts: Vec<&str> = text.split('+').map(str::trim).collect();
        let Some((key, modifiers)) = parts.split_last() else {
            return Err(bad("it is empty".to_owned()));
        };
        let modifiers = modifiers
            .iter()
            .map(|m| {
                MODIFIERS
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(m))
                    .map(|(_, sym)| *sym)
                    .ok_or_else(|| {
                        bad(format!(
                            "{m:?} is not a modifier (ctrl, shift, alt or super)"
                        ))
                    })
            })
            .collect::<Result<Vec<u32>>>()?;
        Ok(Chord {
            modifiers,
            key: keysym(key).ok_or_else(|| {
                bad(format!(
                    "{key:?} is not a key this knows (a letter, a digit, F1–F12, or one of {})",
                    NAMED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ))
            })?,
            text: text.to_owned(),
        })
    }
}

impl fmt::Display for Chord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The sym of one key name: a letter or digit (as itself, lower case for letters, which is the
/// unshifted key), `F1`–`F12`, or a name of [`NAMED`] in any case.
fn keysym(name: &str) -> Option<u32> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next())
        && c.is_ascii_alphanumeric()
    {
        return Some(u32::from(c.to_ascii_lowercase()));
    }
    if let Some(n) = name
        .strip_prefix(['F', 'f'])
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| (1..=12).contains(n))
    {
        return Some(0xffbe + n - 1);
    }
    NAMED
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, sym)| *sym)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn chords_read_modifiers_then_one_key() {
        let chord = Chord::parse("ctrl+shift+Escape").unwrap();
        assert_eq!(chord.modifiers, vec![0xffe3, 0xffe1]);
        assert_eq!(chord.key, 0xff1b);
        assert_eq!(Chord::parse("Ctrl+V").unwrap().key, u32::from('v'));
        assert_eq!(Chord::parse("F5").unwrap().key, 0xffc2);
        assert_eq!(Chord::parse("return").unwrap().key, 0xff0d);
    }

    #[test]
    fn a_wrong_chord_names_the_part_at_fault() {
        let e = Chord::parse("hyper+x").unwrap_err().to_string();
        assert!(e.contains("\"hyper\" is not a modifier"), "{e}");
        let e = Chord::parse("ctrl+Banana").unwrap_err().to_string();
        assert!(e.contains("\"Banana\" is not a key"), "{e}");
    }
}
