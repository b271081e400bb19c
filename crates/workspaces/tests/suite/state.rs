//! The editors' state files as VS Code writes them (`docs/observed/vscode.md`), old shapes,
//! and malformed ones: each bad file is named in a warning and the rest is still read.

use std::path::PathBuf;

use cross_agent_workspaces::state::{self, Editor, Target, Workspace};
use pretty_assertions::assert_eq;

use super::support::{file_uri, storage_json, workspace_json};

fn editor(user_data: PathBuf) -> Editor {
    Editor {
        name: "VS Code",
        user_data,
    }
}

fn ws(editor: &Editor, target: Target, name: &str, open: bool, last: bool) -> Workspace {
    Workspace {
        editor: editor.name,
        user_data: editor.user_data.clone(),
        target,
        name: name.to_owned(),
        in_window_state: open,
        last_active: last,
    }
}

/// Two windows open (a folder, the last active, and a multi-root workspace), an empty window,
/// a remote one; `workspaceStorage` knows those and one more; the `.code-workspace` file has
/// comments, a trailing comma, a relative and a URI folder.
#[test]
fn window_state_and_known_workspaces_as_vscode_writes_them() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let user_data = tmp.path().join("Code");
    let api = tmp.path().join("src/api");
    let web = tmp.path().join("src/web");
    let docs = tmp.path().join("src/docs with space");
    let old = tmp.path().join("src/old");
    let ws_file = tmp.path().join("src/both.code-workspace");
    std::fs::create_dir_all(tmp.path().join("src"))?;
    std::fs::write(
        &ws_file,
        format!(
            "// two folders\n{{\n\t\"folders\": [\n\t\t{{ \"path\": \"./sub/../web\" }},\n\t\t{{ \"uri\": \"{}\" }},\n\t],\n\t\"settings\": {{}}\n}}\n",
            file_uri(&docs)
        ),
    )?;
    let storage = format!(
        r#"{{
    "telemetry.sqmId": "",
    "theme": "vs-dark",
    "windowsState": {{
        "lastActiveWindow": {{
            "folder": "{api}",
            "backupPath": "{ud}/Backups/1a2b",
            "uiState": {{ "mode": 1, "x": 0, "y": 25, "width": 1280, "height": 775 }}
        }},
        "openedWindows": [
            {{
                "folder": "{api}",
                "backupPath": "{ud}/Backups/1a2b",
                "uiState": {{ "mode": 1, "x": 0, "y": 25, "width": 1280, "height": 775 }}
            }},
            {{
                "workspaceIdentifier": {{ "id": "5f3c", "configURIPath": "{wsf}" }},
                "backupPath": "{ud}/Backups/5f3c",
                "uiState": {{ "mode": 0, "x": 10, "y": 10, "width": 800, "height": 600 }}
            }},
            {{
                "backupPath": "{ud}/Backups/1701000000000",
                "uiState": {{ "mode": 1, "x": 0, "y": 0, "width": 800, "height": 600 }}
            }},
            {{
                "folder": "vscode-remote://ssh-remote%2Bbox/home/u/svc",
                "remoteAuthority": "ssh-remote+box",
                "uiState": {{ "mode": 1, "x": 0, "y": 0, "width": 800, "height": 600 }}
            }}
        ]
    }},
    "profileAssociations": {{ "workspaces": {{}}, "emptyWindows": {{}} }}
}}"#,
        api = file_uri(&api),
        wsf = file_uri(&ws_file),
        ud = user_data.display(),
    );
    storage_json(&user_data, &storage)?;
    workspace_json(
        &user_data,
        "b1946ac92492d2347c6235b4d2611184",
        &format!("{{\n  \"folder\": \"{}\"\n}}", file_uri(&api)),
    )?;
    workspace_json(
        &user_data,
        "5f3c",
        &format!("{{\n  \"workspace\": \"{}\"\n}}", file_uri(&ws_file)),
    )?;
    workspace_json(
        &user_data,
        "0cc175b9c0f1b6a831c399e269772661",
        &format!("{{\n  \"folder\": \"{}\"\n}}", file_uri(&old)),
    )?;
    // A folder with no workspace.json (an empty window's) is nothing to read.
    std::fs::create_dir_all(user_data.join("User/workspaceStorage/1701000000000"))?;

    let editor = editor(user_data);
    let mut warnings = Vec::new();
    let found = state::read_editor(&editor, &mut warnings);
    assert_eq!(warnings, vec![]);
    assert_eq!(
        found,
        vec![
            ws(&editor, Target::Folder { path: api }, "api", true, true),
            ws(
                &editor,
                Target::Workspace {
                    file: ws_file,
                    folders: vec![web, docs],
                },
                "both (Workspace)",
                true,
                false
            ),
            ws(
                &editor,
                Target::Remote {
                    uri: "vscode-remote://ssh-remote%2Bbox/home/u/svc".into()
                },
                "svc",
                true,
                false
            ),
            ws(&editor, Target::Folder { path: old }, "old", false, false),
        ]
    );
    Ok(())
}

/// Older releases' shapes: `folderUri` components, `folderPath`, `workspace.configPath`.
#[test]
fn older_window_state_shapes_are_read() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let user_data = tmp.path().join("Code");
    storage_json(
        &user_data,
        r#"{"windowsState": {
            "lastActiveWindow": {"folderUri": {"$mid": 1, "scheme": "file", "path": "/p/one"}, "uiState": {}},
            "openedWindows": [
                {"folderPath": "/p/two", "uiState": {}},
                {"workspace": {"id": "9", "configPath": "/p/three.code-workspace"}, "uiState": {}}
            ]}}"#,
    )?;
    let editor = editor(user_data);
    let mut warnings = Vec::new();
    let found = state::read_editor(&editor, &mut warnings);
    let targets: Vec<&Target> = found.iter().map(|w| &w.target).collect();
    assert_eq!(
        targets,
        vec![
            &Target::Folder {
                path: "/p/one".into()
            },
            &Target::Folder {
                path: "/p/two".into()
            },
            &Target::Workspace {
                file: "/p/three.code-workspace".into(),
                folders: vec![]
            },
        ]
    );
    // The workspace file is not there: not a warning (a missing file is nothing to read).
    assert_eq!(warnings, vec![]);
    Ok(())
}

/// A `storage.json` that is not JSON, a `workspace.json` that is not, a window whose folder is
/// not a string, a workspace file with no folders: each named, the rest read.
#[test]
fn malformed_files_are_named_and_the_rest_is_read() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let user_data = tmp.path().join("Code");
    let storage = storage_json(&user_data, "{\"windowsState\": {\"lastActiveWindow\": ")?;
    let bad_meta = workspace_json(&user_data, "aaaa", "{\"folder\": 42}")?;
    let good = tmp.path().join("good");
    workspace_json(
        &user_data,
        "bbbb",
        &format!("{{\"folder\": \"{}\"}}", file_uri(&good)),
    )?;
    let neither = workspace_json(&user_data, "cccc", "{\"other\": \"x\"}")?;
    let editor = editor(user_data.clone());
    let mut warnings = Vec::new();
    let found = state::read_editor(&editor, &mut warnings);
    assert_eq!(
        found.iter().map(|w| &w.target).collect::<Vec<_>>(),
        vec![&Target::Folder { path: good }]
    );
    let text: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(text.len(), 3, "{text:#?}");
    assert!(
        text[0].starts_with(&format!(
            "{} is not what the editor writes there: not JSON",
            storage.display()
        )),
        "{text:#?}"
    );
    let rest = &text[1..];
    assert!(
        rest.iter()
            .any(|t| t.starts_with(&format!("{} is not", bad_meta.display()))),
        "{text:#?}"
    );
    assert!(
        rest.iter().any(|t| t
            == &format!(
                "{} is not what the editor writes there: neither `folder` nor `workspace`",
                neither.display()
            )),
        "{text:#?}"
    );

    // One bad window among good ones: named by its place, the others read.
    let one = tmp.path().join("one");
    storage_json(
        &user_data,
        &format!(
            r#"{{"windowsState": {{"lastActiveWindow": {{"folder": "{}", "uiState": {{}}}},
                "openedWindows": [{{"folder": 7, "uiState": {{}}}}, {{"folder": "{}", "uiState": {{}}}}]}}}}"#,
            file_uri(&one),
            file_uri(&one)
        ),
    )?;
    let mut warnings = Vec::new();
    let found = state::read_editor(&editor, &mut warnings);
    assert!(
        found
            .iter()
            .any(|w| w.target == Target::Folder { path: one.clone() } && w.last_active)
    );
    assert!(
        warnings.iter().any(|w| w.to_string()
            == format!(
                "{} is not what the editor writes there: `windowsState.openedWindows[0]`: `folder` is not a string",
                storage.display()
            )),
        "{warnings:#?}"
    );
    Ok(())
}

/// A `storage.json` that is a link is refused by name and not read, though what it points at
/// is a good window state.
#[test]
fn a_linked_state_file_is_refused_not_followed() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let user_data = tmp.path().join("Code");
    let elsewhere = tmp.path().join("elsewhere.json");
    std::fs::write(
        &elsewhere,
        r#"{"windowsState": {"lastActiveWindow": {"folder": "file:///p/secret", "uiState": {}}}}"#,
    )?;
    std::fs::create_dir_all(user_data.join("User/globalStorage"))?;
    let link = user_data.join("User/globalStorage/storage.json");
    std::os::unix::fs::symlink(&elsewhere, &link)?;
    let mut warnings = Vec::new();
    let found = state::read_editor(&editor(user_data), &mut warnings);
    assert_eq!(found, vec![]);
    assert_eq!(
        warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
        vec![format!(
            "{} is a symbolic link, and links are never followed here; open the real file or folder instead of the link",
            link.display()
        )]
    );
    Ok(())
}

/// Every editor of the family is looked for, by VS Code's rule.
#[test]
fn the_whole_family_is_looked_for() {
    let home = PathBuf::from("/h");
    let editors = Editor::all(Some(&home), |name| match name {
        "XDG_CONFIG_HOME" => Some("/x".into()),
        _ => None,
    });
    let names: Vec<(&str, PathBuf)> = editors
        .iter()
        .map(|e| (e.name, e.user_data.clone()))
        .collect();
    if cfg!(target_os = "linux") {
        assert_eq!(
            names,
            vec![
                ("VS Code", PathBuf::from("/x/Code")),
                ("VS Code Insiders", PathBuf::from("/x/Code - Insiders")),
                ("VSCodium", PathBuf::from("/x/VSCodium")),
                ("Cursor", PathBuf::from("/x/Cursor")),
                ("Windsurf", PathBuf::from("/x/Windsurf")),
            ]
        );
    }
}
