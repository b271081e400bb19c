//! The desktop as the editors see it: which workspaces VS Code and its forks (Insiders,
//! VSCodium, Cursor, Windsurf) have open, in which live window, and the git state of each —
//! `cross-agent windows`, and the window and branch the session listing and cards show.
//!
//! In `docs/architecture.md` this is the `workspaces` crate, beside `stores` (whose rule for
//! the editors' user-data folders it reuses): it reads the editors' own state files
//! ([`state`]: `User/globalStorage/storage.json`'s window state and
//! `User/workspaceStorage/*/workspace.json`), never writing them and never following a link
//! ([`safe`]); the git state of each folder with gitoxide, bounded in time and never writing to
//! the repository ([`git`]); the live X11 windows, when there is a display ([`x11`]); and puts
//! them together ([`listing`]); and where a session sits: its workspace's window and its branch
//! ([`place`]). What is read and what each field means: `docs/desktop.md`.

pub mod error;
pub mod git;
pub mod listing;
pub mod place;
pub mod safe;
pub mod state;
pub mod x11;

pub use error::{Error, Result, Warning};
pub use git::{Count, GitState, Head};
pub use listing::{Listing, ListingOptions, Row};
pub use place::{Place, Places};
pub use state::{Editor, Target, Workspace};
pub use x11::{LiveWindow, LiveWindows};
