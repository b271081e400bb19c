//! The held sessions give back exactly what was put in, share what repeats, and compare as the
//! sessions they were made from.

use std::path::PathBuf;

use pretty_assertions::assert_eq;

use super::*;

fn session(agent: Agent, id: &str, cwd: Option<&str>, path: &str) -> Session {
    Session {
        agent,
        session_id: id.to_owned(),
        cwd: cwd.map(PathBuf::from),
        title: Some(format!("title of {id}")),
        title_is_assigned: id.len().is_multiple_of(2),
        first_activity: Some(UnixMillis(1_796_000_000_000)),
        last_activity: Some(UnixMillis(1_796_000_600_000)),
        is_working: id.ends_with('1'),
        path: PathBuf::from(path),
        copilot: None,
    }
}

/// Every shape a store gives, and the odd ones: each comes back whole, field for field.
fn every_shape() -> Vec<Session> {
    let id = "0a1b2c3d-0000-4000-8000-00000000000a";
    let mut sessions = vec![
        session(
            Agent::Claude,
            id,
            Some("/home/u/proj"),
            &format!("/home/u/.claude/projects/-home-u-proj/{id}.jsonl"),
        ),
        session(
            Agent::Codex,
            "c0dec0de-0000-4000-8000-000000000001",
            Some("/home/u/proj"),
            "/home/u/.codex/sessions/2026/11/23/rollout-2026-11-23T09-38-32-\
             c0dec0de-0000-4000-8000-000000000001.jsonl",
        ),
        session(
            Agent::Grok,
            "9f0e",
            None,
            "/home/u/.grok/sessions/%2Fhome%2Fu%2Fproj/9f0e",
        ),
        // The id twice in the path: the last is the file's.
        session(Agent::Claude, "ab", Some("/ab"), "/ab/x/ab.jsonl"),
        // No id in the path, a relative path, no folder, an empty id.
        session(Agent::Claude, "zz", Some(""), "/somewhere/else.jsonl"),
        session(Agent::Claude, "rel", None, "rel"),
        session(Agent::Claude, "", None, "/p/.jsonl"),
    ];
    sessions[2].title = None;
    sessions[2].first_activity = None;
    sessions[5].last_activity = None;
    sessions[6].title = Some(String::new());
    let mut copilot = session(
        Agent::Copilot,
        "175f7571-2ccf-4879-84cb-816d71ea79c5",
        Some("/home/u/proj"),
        "/home/u/.copilot/session-state/175f7571-2ccf-4879-84cb-816d71ea79c5/events.jsonl",
    );
    copilot.copilot = Some(Box::new(CopilotDetails {
        session_uri: "copilotcli:/175f7571-2ccf-4879-84cb-816d71ea79c5".to_owned(),
        working_directories: vec!["/home/u/proj".to_owned(), "/home/u/other".to_owned()],
        archived: false,
        in_progress: true,
        input_needed: false,
        default_chat: None,
        sdk_session_id: None,
        user_data_dir: "/home/u/.config/Code".to_owned(),
        live: true,
    }));
    sessions.push(copilot);
    // Too long for a record: held whole.
    let mut long = session(Agent::Claude, "long", Some("/w"), "/w/long.jsonl");
    long.title = Some("x".repeat(70_000));
    sessions.push(long);
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let odd = std::ffi::OsStr::from_bytes(b"/home/u/\xff/odd.jsonl");
        let mut not_utf8 = session(Agent::Claude, "odd", Some("/w"), "");
        not_utf8.path = PathBuf::from(odd);
        sessions.push(not_utf8);
        let mut odd_cwd = session(Agent::Claude, "odd-cwd", None, "/w/odd-cwd.jsonl");
        odd_cwd.cwd = Some(PathBuf::from(odd));
        sessions.push(odd_cwd);
    }
    sessions
}

#[test]
fn every_session_comes_back_exactly_as_it_went_in() {
    let sessions = every_shape();
    let held = HeldSessions::new(&sessions);
    assert_eq!(held.len(), sessions.len());
    assert_eq!(held.to_sessions(), sessions);
    for (i, s) in sessions.iter().enumerate() {
        let view = held.get(i).unwrap();
        assert_eq!(view, SessionRef::from(s));
        assert_eq!(view.path(), s.path.as_path());
        assert!(view.same_path(s.into()));
        assert_eq!(view.path_hash(), SessionRef::from(s).path_hash());
        assert_eq!(
            cross_agent_protocol::bridge::IndexedSession::from(view),
            cross_agent_protocol::bridge::IndexedSession::from(s)
        );
    }
    assert_eq!(held.iter().rev().count(), sessions.len());
}

#[test]
fn sessions_that_share_a_directory_share_its_text() {
    let sessions: Vec<Session> = (0..50)
        .map(|n| {
            let id = format!("{n:08x}-0000-4000-8000-000000000000");
            let path = format!("/home/u/.claude/projects/-home-u-proj/{id}.jsonl");
            session(Agent::Claude, &id, Some("/home/u/proj"), &path)
        })
        .collect();
    let held = HeldSessions::new(&sessions);
    let first = held.get(0).unwrap().cwd().unwrap();
    let last = held.get(49).unwrap().cwd().unwrap();
    assert_eq!(first, Path::new("/home/u/proj"));
    assert!(std::ptr::eq(first, last), "one copy of the directory");
    // The directory once, the folder once, the ending once.
    assert_eq!(held.shared.ends.len(), 3);
    assert_eq!(
        held.shared.text.len(),
        "/home/u/proj".len() + 38 + ".jsonl".len()
    );
}

#[test]
fn held_sessions_are_equal_exactly_when_the_sessions_are() {
    let sessions = every_shape();
    assert_eq!(HeldSessions::new(&sessions), HeldSessions::new(&sessions));
    for i in 0..sessions.len() {
        let mut moved = sessions.clone();
        moved[i].last_activity = Some(UnixMillis(1));
        assert_ne!(
            HeldSessions::new(&moved),
            HeldSessions::new(&sessions),
            "{i}"
        );
        let mut renamed = sessions.clone();
        renamed[i].path.set_extension("moved");
        let (held, moved) = (HeldSessions::new(&sessions), HeldSessions::new(&renamed));
        assert_ne!(held, moved, "{i}");
        assert_ne!(held.get(i), moved.get(i), "{i}");
        assert!(
            !held.get(i).unwrap().same_path(moved.get(i).unwrap()),
            "{i}"
        );
    }
}

#[test]
fn past_the_bound_on_shared_strings_sessions_are_held_whole() {
    let sessions: Vec<Session> = (0..u32::from(NONE) + 10)
        .map(|n| {
            let cwd = format!("/w/{n}");
            session(Agent::Claude, &format!("s{n}"), Some(&cwd), "/w/p/x.jsonl")
        })
        .collect();
    let held = HeldSessions::new(&sessions);
    assert!(!held.whole.is_empty());
    assert_eq!(held.to_sessions(), sessions);
}
