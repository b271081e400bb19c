//! The editors' own record of their windows and workspaces, read-only
//! (`docs/observed/vscode.md`):
//!
//! - `<userData>/User/globalStorage/storage.json`, key `windowsState`: the window that was last
//!   active (`lastActiveWindow`) and, when more than one was open, every window
//!   (`openedWindows`), as VS Code last saved them (on blur and on quit: a record of the last
//!   save, not a live view). Each names a folder (`folder`, a URI) or a multi-root workspace
//!   (`workspaceIdentifier.configURIPath`, a URI of its `.code-workspace` file); older
//!   releases wrote `folderUri` (URI components), `folderPath` or `workspace.configPath` (plain
//!   paths), which are read too.
//! - `<userData>/User/workspaceStorage/<id>/workspace.json`: one folder per workspace the editor
//!   ever opened, `{"folder": URI}` or `{"workspace": URI}`: the known workspaces.
//! - A `.code-workspace` file (JSONC): its `folders`, each `{"path": …}` (relative to the file)
//!   or `{"uri": …}`.
//!
//! A file that is missing means nothing to read; one that is malformed, a link, or too large is
//! a [`Warning`] naming it, and everything else is still read.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cross_agent_stores::copilot::{Os, vscode_family_user_data};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Warning};
use crate::safe;

/// `storage.json` holds every main-process setting and cache of the editor: a few MB at most.
const STORAGE_LIMIT: u64 = 64 << 20;
/// `workspace.json` is one URI.
const META_LIMIT: u64 = 64 << 10;
/// A `.code-workspace` file is a list of folders and some settings.
const WORKSPACE_FILE_LIMIT: u64 = 4 << 20;

/// One editor of the VS Code family and its user-data folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editor {
    /// "VS Code", "VS Code Insiders", "VSCodium", "Cursor", "Windsurf" or "VS Code (portable)".
    pub name: &'static str,
    pub user_data: PathBuf,
}

impl Editor {
    /// Every editor's user-data folder on this system, by VS Code's own rule (the one in
    /// `stores`, shared with the Copilot reader): `VSCODE_PORTABLE`, `VSCODE_APPDATA`,
    /// `XDG_CONFIG_HOME`, else under the home folder.
    pub fn all(home: Option<&Path>, var: impl Fn(&str) -> Option<OsString>) -> Vec<Editor> {
        vscode_family_user_data(Os::current(), home, &var)
            .into_iter()
            .map(|place| Editor {
                name: place.editor,
                user_data: place.path,
            })
            .collect()
    }

    /// What the editor's window titles end with (`window.title`'s `${appName}`).
    pub fn app_name(&self) -> &'static str {
        app_name(self.name)
    }

    /// `User/globalStorage/storage.json`.
    pub fn storage_json(&self) -> PathBuf {
        self.user_data.join("User/globalStorage/storage.json")
    }

    /// `User/workspaceStorage`.
    pub fn workspace_storage(&self) -> PathBuf {
        self.user_data.join("User/workspaceStorage")
    }
}

/// The product name an editor puts at the end of its window titles.
pub fn app_name(editor: &str) -> &'static str {
    match editor {
        "VS Code Insiders" => "Visual Studio Code - Insiders",
        "VSCodium" => "VSCodium",
        "Cursor" => "Cursor",
        "Windsurf" => "Windsurf",
        _ => "Visual Studio Code",
    }
}

/// What a window or workspace has open.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// One folder on this machine.
    Folder { path: PathBuf },
    /// A multi-root workspace: its `.code-workspace` file and the folders it lists (empty when
    /// the file could not be read: a warning says why).
    Workspace {
        file: PathBuf,
        folders: Vec<PathBuf>,
    },
    /// A folder or workspace on another machine (`vscode-remote://…`, …): no git state here.
    Remote { uri: String },
}

/// One workspace an editor knows, and whether its window state names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workspace {
    pub editor: &'static str,
    pub user_data: PathBuf,
    pub target: Target,
    /// What the editor's window title shows for it (`${rootName}`): the folder's name, or
    /// `<name> (Workspace)` for a `.code-workspace` file.
    pub name: String,
    /// Named in `storage.json`'s window state: open when the editor last saved it.
    pub in_window_state: bool,
    /// The window that was last active when the editor last saved its state.
    pub last_active: bool,
}

impl Workspace {
    /// The folders it opens (a folder's own path, a workspace file's folders).
    pub fn folders(&self) -> &[PathBuf] {
        match &self.target {
            Target::Folder { path } => std::slice::from_ref(path),
            Target::Workspace { folders, .. } => folders,
            Target::Remote { .. } => &[],
        }
    }

    /// Its first folder: where its git state is read, and what the listing shows.
    pub fn folder(&self) -> Option<&Path> {
        self.folders().first().map(PathBuf::as_path)
    }
}

/// Every workspace `editor` records: those in its window state first (the last active one
/// first), then the others it knows, by path. Files that cannot be read add a warning each.
pub fn read_editor(editor: &Editor, warnings: &mut Vec<Warning>) -> Vec<Workspace> {
    // Keyed by what is open, so the two records of one workspace are one.
    let mut found: BTreeMap<Target, Workspace> = BTreeMap::new();
    let mut order: Vec<Target> = Vec::new();
    for (target, last_active) in window_state(editor, warnings) {
        let entry = found.entry(target.clone()).or_insert_with(|| {
            order.push(target.clone());
            workspace(editor, target, warnings)
        });
        entry.in_window_state = true;
        entry.last_active |= last_active;
    }
    let mut known: Vec<Target> = known_workspaces(editor, warnings)
        .into_iter()
        .filter(|t| !found.contains_key(t))
        .collect();
    known.sort();
    known.dedup();
    for target in known {
        order.push(target.clone());
        let ws = workspace(editor, target.clone(), warnings);
        found.insert(target, ws);
    }
    order
        .into_iter()
        .filter_map(|target| found.remove(&target))
        .collect()
}

/// A workspace of `editor` opening `target`, not (yet) in its window state.
fn workspace(editor: &Editor, target: Target, warnings: &mut Vec<Warning>) -> Workspace {
    let target = match target {
        Target::Workspace { file, .. } => Target::Workspace {
            folders: workspace_file_folders(&file, warnings),
            file,
        },
        other => other,
    };
    Workspace {
        editor: editor.name,
        user_data: editor.user_data.clone(),
        name: title_name(editor, &target),
        target,
        in_window_state: false,
        last_active: false,
    }
}

/// The name VS Code's title shows for a target (`labels.ts`' workspace label).
fn title_name(editor: &Editor, target: &Target) -> String {
    match target {
        Target::Folder { path } => base_name(path),
        Target::Workspace { file, .. } => {
            // An untitled workspace lives in `<userData>/Workspaces/<id>/workspace.json`.
            if file.starts_with(editor.user_data.join("Workspaces")) {
                "Untitled (Workspace)".to_owned()
            } else {
                let stem = file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("{stem} (Workspace)")
            }
        }
        Target::Remote { uri } => uri
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(uri)
            .to_owned(),
    }
}

fn base_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The windows `storage.json` names, each with whether it was the last active one.
fn window_state(editor: &Editor, warnings: &mut Vec<Warning>) -> Vec<(Target, bool)> {
    let path = editor.storage_json();
    let bytes = match safe::read_capped(&path, STORAGE_LIMIT) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Vec::new(),
        Err(e) => {
            warnings.push(e.into());
            return Vec::new();
        }
    };
    #[derive(Deserialize)]
    struct Storage {
        #[serde(rename = "windowsState")]
        windows_state: Option<Value>,
    }
    let storage: Storage = match serde_json::from_slice(&bytes) {
        Ok(storage) => storage,
        Err(e) => {
            warnings.push(malformed(&path, json_problem(&e)));
            return Vec::new();
        }
    };
    let Some(state) = storage.windows_state else {
        return Vec::new();
    };
    let Value::Object(state) = state else {
        warnings.push(malformed(
            &path,
            "`windowsState` is not an object".to_owned(),
        ));
        return Vec::new();
    };
    let mut windows = Vec::new();
    let mut take = |value: &Value, what: &str, last_active: bool| match window_target(value) {
        Ok(Some(target)) => windows.push((target, last_active)),
        // An empty window (no folder, no workspace).
        Ok(None) => {}
        Err(reason) => warnings.push(malformed(&path, format!("{what}: {reason}"))),
    };
    if let Some(last) = state.get("lastActiveWindow") {
        take(last, "`windowsState.lastActiveWindow`", true);
    }
    match state.get("openedWindows") {
        None | Some(Value::Null) => {}
        Some(Value::Array(opened)) => {
            for (i, window) in opened.iter().enumerate() {
                take(window, &format!("`windowsState.openedWindows[{i}]`"), false);
            }
        }
        Some(_) => warnings.push(malformed(
            &path,
            "`windowsState.openedWindows` is not a list".to_owned(),
        )),
    }
    windows
}

/// What one serialized window opens (`windowsStateStorage.ts`' `restoreWindowState`): `Ok(None)`
/// for an empty window.
fn window_target(window: &Value) -> Result<Option<Target>, String> {
    let Value::Object(window) = window else {
        return Err("not an object".to_owned());
    };
    let string = |key: &str| -> Result<Option<&str>, String> {
        match window.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("`{key}` is not a string")),
        }
    };
    if let Some(uri) = string("folder")? {
        return Ok(Some(folder_target(uri)?));
    }
    if let Some(components) = window.get("folderUri").filter(|v| !v.is_null()) {
        return Ok(Some(components_target(components)?));
    }
    if let Some(path) = string("folderPath")? {
        return Ok(Some(Target::Folder {
            path: PathBuf::from(path),
        }));
    }
    match window.get("workspaceIdentifier") {
        None | Some(Value::Null) => {}
        Some(id) => {
            let uri = id
                .get("configURIPath")
                .and_then(Value::as_str)
                .ok_or("`workspaceIdentifier.configURIPath` is not a string")?;
            return Ok(Some(workspace_target(uri)?));
        }
    }
    match window.get("workspace") {
        None | Some(Value::Null) => {}
        Some(old) => {
            let path = old
                .get("configPath")
                .and_then(Value::as_str)
                .ok_or("`workspace.configPath` is not a string")?;
            return Ok(Some(Target::Workspace {
                file: PathBuf::from(path),
                folders: Vec::new(),
            }));
        }
    }
    Ok(None)
}

/// A folder URI as VS Code writes it (`URI.toString()`).
fn folder_target(uri: &str) -> Result<Target, String> {
    Ok(match file_path(uri)? {
        Some(path) => Target::Folder { path },
        None => Target::Remote {
            uri: uri.to_owned(),
        },
    })
}

/// A `.code-workspace` file's URI.
fn workspace_target(uri: &str) -> Result<Target, String> {
    Ok(match file_path(uri)? {
        Some(file) => Target::Workspace {
            file,
            folders: Vec::new(),
        },
        None => Target::Remote {
            uri: uri.to_owned(),
        },
    })
}

/// An old release's `folderUri`: URI components (`scheme`, `authority`, `path`).
fn components_target(components: &Value) -> Result<Target, String> {
    let field = |key: &str| components.get(key).and_then(Value::as_str).unwrap_or("");
    match field("scheme") {
        "file" if field("authority").is_empty() => Ok(Target::Folder {
            path: PathBuf::from(field("path")),
        }),
        "" => Err("`folderUri` has no scheme".to_owned()),
        scheme => Ok(Target::Remote {
            uri: format!("{scheme}://{}{}", field("authority"), field("path")),
        }),
    }
}

/// The local path of a `file:` URI; `None` for another scheme (a remote folder).
fn file_path(uri: &str) -> Result<Option<PathBuf>, String> {
    let parsed = url::Url::parse(uri).map_err(|e| format!("`{uri}` is not a URI ({e})"))?;
    if parsed.scheme() != "file" {
        return Ok(None);
    }
    parsed
        .to_file_path()
        .map(Some)
        .map_err(|()| format!("`{uri}` is not a local file URI"))
}

/// Every workspace `workspaceStorage/*/workspace.json` names.
fn known_workspaces(editor: &Editor, warnings: &mut Vec<Warning>) -> Vec<Target> {
    let dir = editor.workspace_storage();
    if safe::is_link(&dir) {
        warnings.push(Error::Link { path: dir }.into());
        return Vec::new();
    }
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(source) => {
            warnings.push(Error::Io { path: dir, source }.into());
            return Vec::new();
        }
    };
    let mut targets = Vec::new();
    for entry in entries.flatten() {
        // A link among the folders is refused by the read below (its `workspace.json` is
        // reached through it): named, not followed.
        let path = entry.path().join("workspace.json");
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            warnings.push(Error::Link { path: entry.path() }.into());
            continue;
        }
        let bytes = match safe::read_capped(&path, META_LIMIT) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => continue,
            Err(e) => {
                warnings.push(e.into());
                continue;
            }
        };
        #[derive(Deserialize)]
        struct Meta {
            folder: Option<String>,
            workspace: Option<String>,
        }
        let target = match serde_json::from_slice::<Meta>(&bytes) {
            Ok(Meta {
                folder: Some(uri), ..
            }) => folder_target(&uri),
            Ok(Meta {
                workspace: Some(uri),
                ..
            }) => workspace_target(&uri),
            Ok(_) => Err("neither `folder` nor `workspace`".to_owned()),
            Err(e) => Err(json_problem(&e)),
        };
        match target {
            Ok(target) => targets.push(target),
            Err(reason) => warnings.push(malformed(&path, reason)),
        }
    }
    targets
}

/// The folders a `.code-workspace` file lists, made absolute against the file's folder.
fn workspace_file_folders(file: &Path, warnings: &mut Vec<Warning>) -> Vec<PathBuf> {
    let bytes = match safe::read_capped(file, WORKSPACE_FILE_LIMIT) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Vec::new(),
        Err(e) => {
            warnings.push(e.into());
            return Vec::new();
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let value: Option<Value> =
        match jsonc_parser::parse_to_serde_value(&text, &jsonc_parser::ParseOptions::default()) {
            Ok(value) => value,
            Err(e) => {
                warnings.push(malformed(file, format!("not JSONC ({e})")));
                return Vec::new();
            }
        };
    let Some(Value::Array(folders)) = value.as_ref().and_then(|v| v.get("folders")) else {
        warnings.push(malformed(file, "no `folders` list".to_owned()));
        return Vec::new();
    };
    let base = file.parent().unwrap_or(Path::new("/"));
    let mut paths = Vec::new();
    for (i, folder) in folders.iter().enumerate() {
        if let Some(path) = folder.get("path").and_then(Value::as_str) {
            paths.push(lexical(&base.join(path)));
        } else if let Some(uri) = folder.get("uri").and_then(Value::as_str) {
            match file_path(uri) {
                Ok(Some(path)) => paths.push(path),
                // A remote folder of a local workspace: nothing here to read.
                Ok(None) => {}
                Err(reason) => warnings.push(malformed(file, format!("`folders[{i}]`: {reason}"))),
            }
        } else {
            warnings.push(malformed(
                file,
                format!("`folders[{i}]` has neither `path` nor `uri`"),
            ));
        }
    }
    paths
}

/// `path` with its `.` and `..` parts resolved as text (`/src/ws/../web` → `/src/web`), as VS
/// Code resolves a workspace file's relative folders: no link is looked at.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A JSON error in words: not JSON at all, or JSON of another shape.
fn json_problem(e: &serde_json::Error) -> String {
    match e.classify() {
        serde_json::error::Category::Data => format!("an unexpected shape ({e})"),
        serde_json::error::Category::Io
        | serde_json::error::Category::Syntax
        | serde_json::error::Category::Eof => format!("not JSON ({e})"),
    }
}

fn malformed(path: &Path, reason: String) -> Warning {
    Error::Malformed {
        path: path.to_path_buf(),
        reason,
    }
    .into()
}
