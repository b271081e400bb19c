//! The review robot's state file across restarts: what a restart reads back (no burst), what
//! a fresh or damaged file allows (the cap), that the file names no session, and the refusals
//! of a link and of a secret others may read.

use std::os::unix::fs::PermissionsExt;

use cross_agent_review::cadence::{self, Cadence, Candidate, InstallKey, Reviewed};
use pretty_assertions::assert_eq;

const MIN: i64 = 60_000;

fn idle_sessions(now: i64, n: usize) -> Vec<Candidate> {
    (0..n)
        .map(|i| Candidate {
            agent: if i % 2 == 0 { "claude" } else { "codex" }.into(),
            session_id: format!("0a1b2c3d-0000-4000-8000-00000000000{i}"),
            last_turn_ended_ms: now - 45 * MIN - i as i64,
            working: false,
        })
        .collect()
}

fn verdict() -> Reviewed {
    Reviewed {
        outcome: "verdict".into(),
        verdict: Some("drifting".into()),
        correction: Some("refused: cooldown".into()),
    }
}

#[test]
fn a_restart_reads_the_state_back_and_reviews_none_until_due() {
    let home = tempfile::tempdir().unwrap();
    let now = 1_000_000 * MIN;
    let sessions = idle_sessions(now, 6);
    let cadence = Cadence::default();
    // A fresh state: at most the cap per pass.
    let key = InstallKey::load_or_create(home.path()).unwrap();
    let mut state = cadence::load(home.path()).unwrap().state;
    let mut passes = 0;
    loop {
        let picked = cadence::pick(&state, &key, &sessions, now + passes * MIN, &cadence);
        if picked.is_empty() {
            break;
        }
        assert!(picked.len() <= cadence.per_pass, "{}", picked.len());
        for c in picked {
            state.record(&key, c, now + passes * MIN, verdict());
        }
        cadence::save(home.path(), &state).unwrap();
        passes += 1;
    }
    assert_eq!(passes, 3, "six sessions, two a pass");
    // "Restart": the key and the state read back from the home; nothing is due in this idle
    // period, however long it lasts.
    let key = InstallKey::load_or_create(home.path()).unwrap();
    let state = cadence::load(home.path()).unwrap().state;
    assert_eq!(state.sessions.len(), 6);
    for later in [now + 10 * MIN, now + 600 * MIN] {
        assert!(cadence::pick(&state, &key, &sessions, later, &cadence).is_empty());
    }
    // A new turn of one session makes it (and only it) due again, after idle and interval.
    let mut moved = sessions.clone();
    moved[0].last_turn_ended_ms = now + 200 * MIN;
    let due = cadence::pick(&state, &key, &moved, now + 221 * MIN, &cadence);
    assert_eq!(due, vec![&moved[0]]);
}

#[test]
fn the_state_file_names_no_session_and_another_secret_hashes_differently() {
    let home = tempfile::tempdir().unwrap();
    let now = 1_000_000 * MIN;
    let sessions = idle_sessions(now, 3);
    let key = InstallKey::load_or_create(home.path()).unwrap();
    let mut state = cadence::State::default();
    for c in &sessions {
        state.record(&key, c, now, verdict());
    }
    cadence::save(home.path(), &state).unwrap();
    let path = home.path().join(cadence::STATE_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    for c in &sessions {
        assert!(!text.contains(&c.session_id), "{text}");
        assert!(!text.contains(&c.session_id[..8]), "{text}");
    }
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&home.path().join(cadence::KEY_FILE)), 0o600);
    // Another install's secret: other names for the same sessions, so its file and this one
    // cannot be matched up, and this state means nothing under it.
    let other = InstallKey::from_bytes([9; 32]);
    for c in &sessions {
        let ours = key.hash(&c.agent, &c.session_id);
        assert!(state.sessions.contains_key(&ours));
        assert_ne!(ours, other.hash(&c.agent, &c.session_id));
    }
    assert_eq!(
        cadence::pick(
            &state,
            &other,
            &sessions,
            now + 30 * MIN,
            &Cadence::default()
        )
        .len(),
        2
    );
}

#[test]
fn a_damaged_state_is_moved_aside_and_starts_afresh_within_the_cap() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(cadence::STATE_FILE);
    std::fs::write(&path, b"{\"sessions\": {\"ab\": ").unwrap();
    let loaded = cadence::load(home.path()).unwrap();
    let aside = loaded.quarantined.expect("moved aside");
    assert!(
        aside
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("robot-review-state.json.damaged-"),
        "{}",
        aside.display()
    );
    assert_eq!(std::fs::read(&aside).unwrap(), b"{\"sessions\": {\"ab\": ");
    assert!(!path.exists());
    assert!(loaded.state.sessions.is_empty());
}

#[test]
fn a_link_is_refused_naming_the_path() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = home.path().join("elsewhere.json");
    std::fs::write(&elsewhere, b"{}").unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.path().join(cadence::STATE_FILE)).unwrap();
    let error = cadence::load(home.path()).unwrap_err().to_string();
    assert!(error.contains("robot-review-state.json"), "{error}");
    assert!(error.contains("symbolic link"), "{error}");
    std::os::unix::fs::symlink(&elsewhere, home.path().join(cadence::KEY_FILE)).unwrap();
    let error = InstallKey::load_or_create(home.path())
        .unwrap_err()
        .to_string();
    assert!(error.contains("robot-review.key"), "{error}");
}

#[test]
fn a_secret_others_may_read_is_refused_with_the_fix() {
    let home = tempfile::tempdir().unwrap();
    InstallKey::load_or_create(home.path()).unwrap();
    let path = home.path().join(cadence::KEY_FILE);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let error = InstallKey::read(home.path()).unwrap_err().to_string();
    assert!(error.contains("chmod 600"), "{error}");
}
