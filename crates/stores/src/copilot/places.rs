//! Where Copilot's sessions are: VS Code's user-data folders (Stable and Insiders), each with
//! its Agent Host endpoint registry, host catalog and per-session databases, and the Copilot
//! SDK's `session-state` folder (`docs/observed/copilot.md` §2.1, §2.2, §4).
//!
//! The defaults follow VS Code's own resolution (`userDataPath.ts`, `docs/observed/copilot.md`
//! §2.1): `$VSCODE_PORTABLE/user-data` for a portable VS Code, then `<base>/<product>` for
//! product `Code` and `Code - Insiders`, where `<base>` is `$VSCODE_APPDATA` when set, else
//! `${XDG_CONFIG_HOME:-~/.config}` on Linux and `~/Library/Application Support` on macOS; the
//! SDK's folder is `${COPILOT_HOME:-~/.copilot}/session-state`. They are a pure function of
//! the OS, the home folder and the variables ([`CopilotPlaces::for_os`]), so that each OS's
//! layout is tested on any. The four
//! `CROSS_AGENT_COPILOT_*` variables replace them as `:`-separated lists whose entries
//! correspond in order (entry `i` of each describes editor `i`); lists of different lengths
//! cannot be paired, so they are refused whole, with a message that says so.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cross_agent_protocol::settings as var;
use serde::{Deserialize, Serialize};

/// VS Code's editions whose user-data folders hold an Agent Host, and their product names (the
/// folder under the base).
const PRODUCTS: [(&str, &str); 2] = [("VS Code", "Code"), ("VS Code Insiders", "Code - Insiders")];

/// Every editor of the VS Code family whose user data is laid out as VS Code's (the same
/// `userDataPath.ts` rule with its own product folder): the editions above and the forks.
const FAMILY: [(&str, &str); 5] = [
    ("VS Code", "Code"),
    ("VS Code Insiders", "Code - Insiders"),
    ("VSCodium", "VSCodium"),
    ("Cursor", "Cursor"),
    ("Windsurf", "Windsurf"),
];

/// The endpoint registry under a user-data folder.
const ENDPOINT_TAIL: &str = "agent-host/local-endpoint/entries";
/// The host catalog under a user-data folder.
const HOST_DB_TAIL: &str = "User/globalStorage/agent-host.db";
/// The per-session databases' folder under a user-data folder.
const SESSION_DIR_TAIL: &str = "agentSessionData";

/// The operating systems whose VS Code layout is known (others use Linux's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    MacOs,
}

impl Os {
    /// The OS this was built for.
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else {
            Os::Linux
        }
    }
}

/// One editor's Copilot files. A `None` is not looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopilotPlace {
    /// The editor's user-data folder, named in listings and problems; for places given by the
    /// variables, the folder the given paths sit in when they are in VS Code's layout, else the
    /// first path given.
    pub user_data: PathBuf,
    /// `<userData>/User/globalStorage/agent-host.db`.
    pub host_db: Option<PathBuf>,
    /// `<userData>/agentSessionData`.
    pub session_dir: Option<PathBuf>,
    /// The Copilot SDK's `session-state`.
    pub sdk_session_dir: Option<PathBuf>,
    /// `<userData>/agent-host/local-endpoint/entries`.
    pub endpoint_dir: Option<PathBuf>,
}

/// Every editor's Copilot files, and whether they were configured.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CopilotPlaces {
    pub places: Vec<CopilotPlace>,
    /// True when the places came from the `CROSS_AGENT_COPILOT_*` variables: a missing file is
    /// then worth a warning, while a missing default just means no such editor here.
    pub explicit: bool,
    /// Why the variables could not be used (their lists' lengths disagree): said at each
    /// listing, and no Copilot session is listed until it is fixed.
    pub problem: Option<String>,
}

impl CopilotPlaces {
    /// The places for a home folder and a variable lookup on this OS (see the module's
    /// header).
    pub fn from_vars(home: Option<&Path>, var: impl Fn(&str) -> Option<OsString>) -> Self {
        CopilotPlaces::for_os(Os::current(), home, var)
    }

    /// The places on `os` for a home folder and a variable lookup: nothing else is read.
    pub fn for_os(os: Os, home: Option<&Path>, var: impl Fn(&str) -> Option<OsString>) -> Self {
        let list = |name: &'static str| -> Option<(&'static str, Vec<PathBuf>)> {
            let value = var(name).filter(|v| !v.is_empty())?;
            Some((name, std::env::split_paths(&value).collect()))
        };
        let lists: Vec<(&'static str, Vec<PathBuf>)> = [
            var::COPILOT_HOST_DB,
            var::COPILOT_SESSION_DIR,
            var::COPILOT_SDK_SESSION_DIR,
            var::COPILOT_ENDPOINT_DIR,
        ]
        .into_iter()
        .filter_map(list)
        .collect();
        let sdk_default = var("COPILOT_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".copilot")))
            .map(|copilot| copilot.join("session-state"));
        if lists.is_empty() {
            return CopilotPlaces {
                places: default_user_data(os, home, &var)
                    .into_iter()
                    .map(|user_data| CopilotPlace::under(user_data, sdk_default.clone()))
                    .collect(),
                explicit: false,
                problem: None,
            };
        }
        let lengths: Vec<String> = lists
            .iter()
            .map(|(name, entries)| format!("{name} has {}", entries.len()))
            .collect();
        let count = lists[0].1.len();
        if lists.iter().any(|(_, entries)| entries.len() != count) {
            return CopilotPlaces {
                places: Vec::new(),
                explicit: true,
                problem: Some(format!(
                    "the CROSS_AGENT_COPILOT_* lists are paired entry by entry (entry i of each \
                     names the same editor), but their lengths disagree: {}; give each the same \
                     number of `:`-separated entries (no Copilot session is listed until then)",
                    lengths.join(", ")
                )),
            };
        }
        let given = |name: &str, i: usize| -> Option<PathBuf> {
            lists
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, entries)| entries.get(i).cloned())
                .filter(|p| !p.as_os_str().is_empty())
        };
        let places = (0..count)
            .map(|i| {
                let host_db = given(var::COPILOT_HOST_DB, i);
                let session_dir = given(var::COPILOT_SESSION_DIR, i);
                let endpoint_dir = given(var::COPILOT_ENDPOINT_DIR, i);
                let sdk_session_dir = match lists
                    .iter()
                    .any(|(n, _)| *n == var::COPILOT_SDK_SESSION_DIR)
                {
                    true => given(var::COPILOT_SDK_SESSION_DIR, i),
                    false => sdk_default.clone(),
                };
                let user_data = user_data_of(
                    host_db.as_deref(),
                    session_dir.as_deref(),
                    endpoint_dir.as_deref(),
                )
                .or_else(|| host_db.clone())
                .or_else(|| session_dir.clone())
                .or_else(|| endpoint_dir.clone())
                .or_else(|| sdk_session_dir.clone())
                .unwrap_or_default();
                CopilotPlace {
                    user_data,
                    host_db,
                    session_dir,
                    sdk_session_dir,
                    endpoint_dir,
                }
            })
            .collect();
        CopilotPlaces {
            places,
            explicit: true,
            problem: None,
        }
    }

    /// The default places under one home folder on this platform, ignoring the environment:
    /// what tests use.
    pub fn under_home(home: &Path) -> Self {
        CopilotPlaces::from_vars(Some(home), |_| None)
    }
}

impl CopilotPlace {
    /// Every file of an editor in VS Code's layout under `user_data`.
    pub fn under(user_data: PathBuf, sdk_session_dir: Option<PathBuf>) -> Self {
        CopilotPlace {
            host_db: Some(user_data.join(HOST_DB_TAIL)),
            session_dir: Some(user_data.join(SESSION_DIR_TAIL)),
            endpoint_dir: Some(user_data.join(ENDPOINT_TAIL)),
            sdk_session_dir,
            user_data,
        }
    }

    /// Every folder and file whose changes can change this editor's listing.
    pub fn watched(&self) -> impl Iterator<Item = &Path> {
        [
            self.host_db.as_deref().and_then(Path::parent),
            self.session_dir.as_deref(),
            self.endpoint_dir.as_deref(),
            self.sdk_session_dir.as_deref(),
        ]
        .into_iter()
        .flatten()
    }
}

/// One VS Code user-data folder and the editor it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditorUserData {
    /// "VS Code (portable)", "VS Code" or "VS Code Insiders".
    pub editor: &'static str,
    /// The user-data folder: `$VSCODE_PORTABLE/user-data`, `~/.config/Code`, ….
    pub path: PathBuf,
}

/// The user-data folders of VS Code on `os`, by VS Code's own rule (the module's header): a
/// portable one's, then Stable's and Insiders'. The one piece of code for the rule: the
/// listing's default places and `cross-agent install`'s both come from here. A variable that
/// is not an absolute path is passed over (VS Code would resolve a relative one against its
/// own working directory, which is not known here).
pub fn vscode_user_data(
    os: Os,
    home: Option<&Path>,
    var: &impl Fn(&str) -> Option<OsString>,
) -> Vec<EditorUserData> {
    user_data_of_products(os, home, var, &PRODUCTS)
}

/// The user-data folders of the whole VS Code family on `os` (VS Code, Insiders, VSCodium,
/// Cursor, Windsurf), by the same rule as [`vscode_user_data`]: what the workspaces reader
/// (`cross-agent windows`) looks in.
pub fn vscode_family_user_data(
    os: Os,
    home: Option<&Path>,
    var: &impl Fn(&str) -> Option<OsString>,
) -> Vec<EditorUserData> {
    user_data_of_products(os, home, var, &FAMILY)
}

/// VS Code's rule over a list of (editor, product folder).
fn user_data_of_products(
    os: Os,
    home: Option<&Path>,
    var: &impl Fn(&str) -> Option<OsString>,
    products: &'static [(&'static str, &'static str)],
) -> Vec<EditorUserData> {
    let absolute = |name: &str| {
        var(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let portable = absolute("VSCODE_PORTABLE").map(|p| EditorUserData {
        editor: "VS Code (portable)",
        path: p.join("user-data"),
    });
    let base = absolute("VSCODE_APPDATA").or_else(|| match os {
        Os::MacOs => home.map(|h| h.join("Library/Application Support")),
        Os::Linux => absolute("XDG_CONFIG_HOME").or_else(|| home.map(|h| h.join(".config"))),
    });
    portable
        .into_iter()
        .chain(base.into_iter().flat_map(|base| {
            products
                .iter()
                .map(move |(editor, product)| EditorUserData {
                    editor,
                    path: base.join(product),
                })
        }))
        .collect()
}

/// The user-data folders of VS Code on `os` ([`vscode_user_data`]).
fn default_user_data(
    os: Os,
    home: Option<&Path>,
    var: &impl Fn(&str) -> Option<OsString>,
) -> Vec<PathBuf> {
    vscode_user_data(os, home, var)
        .into_iter()
        .map(|place| place.path)
        .collect()
}

/// The user-data folder the given paths sit in, when one of them is in VS Code's layout.
fn user_data_of(
    host_db: Option<&Path>,
    session_dir: Option<&Path>,
    endpoint_dir: Option<&Path>,
) -> Option<PathBuf> {
    let strip = |path: Option<&Path>, tail: &str| -> Option<PathBuf> {
        let path = path?;
        let mut base = path;
        for _ in Path::new(tail).components() {
            base = base.parent()?;
        }
        (base.join(tail) == path).then(|| base.to_path_buf())
    };
    strip(host_db, HOST_DB_TAIL)
        .or_else(|| strip(session_dir, SESSION_DIR_TAIL))
        .or_else(|| strip(endpoint_dir, ENDPOINT_TAIL))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())
    }

    fn user_data(places: &CopilotPlaces) -> Vec<PathBuf> {
        places.places.iter().map(|p| p.user_data.clone()).collect()
    }

    #[test]
    fn linux_defaults_are_stable_and_insiders_under_xdg_config() {
        let places = CopilotPlaces::for_os(
            Os::Linux,
            Some(Path::new("/h")),
            vars(&[("XDG_CONFIG_HOME", "/x"), ("COPILOT_HOME", "/c")]),
        );
        assert!(!places.explicit);
        assert_eq!(
            user_data(&places),
            [
                PathBuf::from("/x/Code"),
                PathBuf::from("/x/Code - Insiders")
            ]
        );
        let first = &places.places[0];
        assert_eq!(
            first.endpoint_dir.as_deref(),
            Some(Path::new("/x/Code/agent-host/local-endpoint/entries"))
        );
        assert_eq!(
            first.host_db.as_deref(),
            Some(Path::new("/x/Code/User/globalStorage/agent-host.db"))
        );
        assert_eq!(
            first.sdk_session_dir.as_deref(),
            Some(Path::new("/c/session-state"))
        );
        // Without XDG_CONFIG_HOME (or with a relative one): ~/.config.
        let places = CopilotPlaces::for_os(
            Os::Linux,
            Some(Path::new("/h")),
            vars(&[("XDG_CONFIG_HOME", "rel")]),
        );
        assert_eq!(
            user_data(&places),
            [
                PathBuf::from("/h/.config/Code"),
                PathBuf::from("/h/.config/Code - Insiders")
            ]
        );
    }

    #[test]
    fn macos_defaults_are_under_application_support_whatever_xdg_says() {
        let places = CopilotPlaces::for_os(
            Os::MacOs,
            Some(Path::new("/Users/u")),
            vars(&[("XDG_CONFIG_HOME", "/x")]),
        );
        assert_eq!(
            user_data(&places),
            [
                PathBuf::from("/Users/u/Library/Application Support/Code"),
                PathBuf::from("/Users/u/Library/Application Support/Code - Insiders")
            ]
        );
        let insiders = &places.places[1];
        assert_eq!(
            insiders.session_dir.as_deref(),
            Some(Path::new(
                "/Users/u/Library/Application Support/Code - Insiders/agentSessionData"
            ))
        );
        assert_eq!(
            insiders.sdk_session_dir.as_deref(),
            Some(Path::new("/Users/u/.copilot/session-state"))
        );
    }

    #[test]
    fn a_portable_vs_code_comes_first_and_vscode_appdata_replaces_the_base() {
        for os in [Os::Linux, Os::MacOs] {
            let places = CopilotPlaces::for_os(
                os,
                Some(Path::new("/h")),
                vars(&[
                    ("VSCODE_PORTABLE", "/opt/vscode/data"),
                    ("VSCODE_APPDATA", "/appdata"),
                    ("XDG_CONFIG_HOME", "/x"),
                ]),
            );
            assert_eq!(
                user_data(&places),
                [
                    PathBuf::from("/opt/vscode/data/user-data"),
                    PathBuf::from("/appdata/Code"),
                    PathBuf::from("/appdata/Code - Insiders")
                ],
                "{os:?}"
            );
            assert_eq!(
                places.places[0].endpoint_dir.as_deref(),
                Some(Path::new(
                    "/opt/vscode/data/user-data/agent-host/local-endpoint/entries"
                ))
            );
        }
    }

    #[test]
    fn lists_pair_in_order_and_name_the_user_data_folder() {
        let places = CopilotPlaces::from_vars(
            Some(Path::new("/h")),
            vars(&[
                (
                    var::COPILOT_HOST_DB,
                    "/a/User/globalStorage/agent-host.db:/b/catalog.db",
                ),
                (var::COPILOT_SESSION_DIR, "/a/agentSessionData:/b/sessions"),
            ]),
        );
        assert!(places.explicit);
        assert_eq!(places.problem, None);
        assert_eq!(places.places.len(), 2);
        assert_eq!(places.places[0].user_data, PathBuf::from("/a"));
        assert_eq!(places.places[1].user_data, PathBuf::from("/b/catalog.db"));
        assert_eq!(
            places.places[1].session_dir.as_deref(),
            Some(Path::new("/b/sessions"))
        );
        assert_eq!(places.places[1].endpoint_dir, None);
        // The SDK folder not given: the default, for every editor.
        assert_eq!(
            places.places[1].sdk_session_dir.as_deref(),
            Some(Path::new("/h/.copilot/session-state"))
        );
    }

    #[test]
    fn lists_of_different_lengths_are_refused_naming_each() {
        let places = CopilotPlaces::from_vars(
            Some(Path::new("/h")),
            vars(&[
                (var::COPILOT_HOST_DB, "/a/h.db:/b/h.db"),
                (var::COPILOT_ENDPOINT_DIR, "/a/entries"),
            ]),
        );
        assert!(places.places.is_empty());
        let problem = places.problem.unwrap();
        assert!(
            problem.contains("CROSS_AGENT_COPILOT_HOST_DB has 2")
                && problem.contains("CROSS_AGENT_COPILOT_ENDPOINT_DIR has 1"),
            "{problem}"
        );
    }
}
