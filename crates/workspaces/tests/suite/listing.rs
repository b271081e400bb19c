//! The listing: the open workspaces of an editor with their git state and window, the known
//! ones only with `all`, and the row a session's folder is in.

use std::path::PathBuf;
use std::time::Duration;

use cross_agent_workspaces::listing::{self, GitCell, ListingOptions};
use cross_agent_workspaces::state::Editor;
use cross_agent_workspaces::x11::{LiveWindow, LiveWindows};
use pretty_assertions::assert_eq;

use super::support::{commits, file_uri, repo, storage_json, workspace_json};

#[test]
fn open_workspaces_with_git_state_window_and_sessions_row() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let api = tmp.path().join("api");
    repo(&api)?;
    commits(&api, "x.txt", 1)?;
    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(&plain)?;
    let known = tmp.path().join("known");
    repo(&known)?;
    let user_data = tmp.path().join("Cursor");
    storage_json(
        &user_data,
        &format!(
            r#"{{"windowsState": {{"lastActiveWindow": {{"folder": "{}", "uiState": {{}}}}, "openedWindows": []}}}}"#,
            file_uri(&api)
        ),
    )?;
    workspace_json(
        &user_data,
        "a",
        &format!(r#"{{"folder": "{}"}}"#, file_uri(&known)),
    )?;
    workspace_json(
        &user_data,
        "b",
        &format!(r#"{{"folder": "{}"}}"#, file_uri(&plain)),
    )?;
    let editors = vec![Editor {
        name: "Cursor",
        user_data,
    }];
    let windows = LiveWindows::Read {
        display: ":9".into(),
        windows: vec![LiveWindow {
            id: "0x1".into(),
            pid: None,
            title: "plain \u{2014} Cursor".into(),
        }],
    };
    let options = ListingOptions {
        editors: editors.clone(),
        all: false,
        git: true,
        git_deadline: Duration::from_secs(10),
        windows,
    };
    let listed = listing::list(&options);
    assert_eq!(listed.warnings, vec![]);
    assert_eq!(listed.display, ":9");
    // `api` is in the window state; `plain` is shown by a live window; `known` neither.
    let rows: Vec<(PathBuf, Option<String>, Option<String>)> = listed
        .rows
        .iter()
        .map(|r| {
            (
                r.workspace.folder().map(PathBuf::from).unwrap_or_default(),
                r.window.as_ref().map(|w| w.id.clone()),
                match &r.git {
                    GitCell::Repository(s) => Some(s.branch_label()),
                    _ => None,
                },
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (api.clone(), None, Some("main".into())),
            (plain.clone(), Some("0x1".into()), None),
        ]
    );
    assert_eq!(
        listing::row_for(&listed.rows, &api.join("src/deep"))
            .and_then(|r| r.workspace.folder().map(PathBuf::from)),
        Some(api.clone())
    );
    assert!(listing::row_for(&listed.rows, &tmp.path().join("elsewhere")).is_none());

    let all = listing::list(&ListingOptions {
        all: true,
        git: false,
        ..options
    });
    assert_eq!(all.rows.len(), 3);
    assert!(all.rows.iter().all(|r| r.git == GitCell::Skipped));
    Ok(())
}
