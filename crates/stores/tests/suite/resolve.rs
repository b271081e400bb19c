//! Resolution primitives over a hand-built `Vec<Session>`: scopes and their ranking, the active
//! window, the best-fit pick, and lookup by id or exact name with every refusal.

use std::path::{Path, PathBuf};

use cross_agent_stores::held::{AsSession, HeldSessions};
use cross_agent_stores::resolve::{
    self, ActiveWindow, Candidate, DirRelation, Lookup, MatchedBy, NameIndex, Resolved, ScanBound,
    Scope, dir_relation, ranked,
};
use cross_agent_stores::{Agent, Session, StoreError, UnixMillis};
use pretty_assertions::assert_eq;
use proptest::prelude::*;

const NOW: UnixMillis = UnixMillis(1_800_000_000_000);
const MINUTE: i64 = 60_000;

fn session(
    agent: Agent,
    id: &str,
    cwd: &str,
    title: Option<&str>,
    assigned: bool,
    minutes_ago: i64,
) -> Session {
    Session {
        agent,
        session_id: id.to_owned(),
        cwd: Some(PathBuf::from(cwd)),
        title: title.map(str::to_owned),
        title_is_assigned: assigned,
        first_activity: Some(UnixMillis(NOW.0 - minutes_ago * MINUTE - 1000)),
        last_activity: Some(UnixMillis(NOW.0 - minutes_ago * MINUTE)),
        is_working: false,
        path: PathBuf::from(format!("/store/{id}.jsonl")),
        copilot: None,
    }
}

fn claude(id: &str, cwd: &str, title: Option<&str>, assigned: bool, minutes_ago: i64) -> Session {
    session(Agent::Claude, id, cwd, title, assigned, minutes_ago)
}

/// The name index a daemon keeps with each generation holds 12 bytes a key (a hash and the
/// session's place, apart), each session filed under its id and its title: it held 16 (a
/// `(u64, usize)` pair), with room for two keys a session whether or not it had a title.
#[test]
fn the_name_index_holds_twelve_bytes_a_key() {
    let sessions: Vec<Session> = (0..1000)
        .map(|i| {
            let title = format!("task {i}");
            let title = (i % 2 == 0).then_some(title.as_str());
            claude(&format!("s{i}"), "/a", title, false, i)
        })
        .collect();
    let index = NameIndex::new(&sessions);
    assert_eq!(index.heap_bytes(), 1500 * 12);
    let found = index
        .lookup(&sessions, "task 998", any(Agent::Claude))
        .unwrap();
    assert_eq!(found.session.session_id, "s998");
}

fn any(agent: Agent) -> Lookup<'static> {
    Lookup {
        agent,
        scope: Scope::Any,
        cwd: Path::new("/"),
        bound: None,
    }
}

/// `resolve::lookup`, checked against the lookup through a [`NameIndex`] the daemon uses: the
/// same session, the same `matched_by`, the same refusal word for word — over the sessions as
/// listed and as the daemon holds them ([`HeldSessions`], read through views).
fn lookup<'a>(
    store: &'a [Session],
    query: &str,
    asked: Lookup<'_>,
) -> Result<Resolved<&'a Session>, StoreError> {
    let whole = resolve::lookup(store, query, asked);
    let indexed = NameIndex::new(store).lookup(store, query, asked);
    assert_eq!(outcome(&indexed), outcome(&whole), "{query:?}");
    let held = HeldSessions::new(store);
    assert_eq!(
        described(&NameIndex::new(&held).lookup(&held, query, asked)),
        described(&whole),
        "{query:?}"
    );
    assert_eq!(
        described(&resolve::lookup(&held, query, asked)),
        described(&whole),
        "{query:?}"
    );
    whole
}

/// A lookup's answer, comparable: which session (by address) and how, or the whole refusal.
fn outcome(found: &Result<Resolved<&Session>, StoreError>) -> String {
    match found {
        Ok(found) => format!("{:p} {:?}", found.session, found.matched_by),
        Err(error) => format!("{error:?}"),
    }
}

/// A lookup's answer, comparable across listings: the session whole and how, or the refusal.
fn described<'a>(found: &Result<Resolved<impl AsSession<'a>>, StoreError>) -> String {
    match found {
        Ok(found) => format!(
            "{:?} {:?}",
            found.session.fields().to_session(),
            found.matched_by
        ),
        Err(error) => format!("{error:?}"),
    }
}

fn ids(sessions: &[&Session]) -> Vec<String> {
    sessions.iter().map(|s| s.session_id.clone()).collect()
}

#[test]
fn dir_relation_compares_whole_components() {
    let cwd = Path::new("/work/proj");
    assert_eq!(
        dir_relation(Path::new("/work/proj"), cwd),
        Some(DirRelation::Exact)
    );
    assert_eq!(
        dir_relation(Path::new("/work/proj/"), cwd),
        Some(DirRelation::Exact)
    );
    assert_eq!(
        dir_relation(Path::new("/work/proj/crates/a"), cwd),
        Some(DirRelation::Subdirectory)
    );
    assert_eq!(
        dir_relation(Path::new("/work"), cwd),
        Some(DirRelation::Parent)
    );
    assert_eq!(dir_relation(Path::new("/"), cwd), Some(DirRelation::Parent));
    // A sibling that shares a prefix of characters is not related.
    assert_eq!(dir_relation(Path::new("/work/project"), cwd), None);
    assert_eq!(dir_relation(Path::new("/work/pro"), cwd), None);
}

fn scoped_store() -> Vec<Session> {
    vec![
        claude("parent-newest", "/home/u", None, false, 1),
        claude("sub-new", "/home/u/proj/sub", None, false, 2),
        claude("exact-old", "/home/u/proj", None, false, 30),
        claude("exact-new", "/home/u/proj", None, false, 10),
        claude("elsewhere", "/srv/other", None, false, 0),
        session(Agent::Codex, "codex-exact", "/home/u/proj", None, false, 0),
    ]
}

/// docs/spec/cross-agent-mcp.md §4: "`cwd` = same directory and its subdirectories"; §5 ranks exact first.
#[test]
fn scope_cwd_admits_the_directory_and_its_subdirectories_not_its_parents() {
    let store = scoped_store();
    let got = ranked(&store, Agent::Claude, Scope::Cwd, Path::new("/home/u/proj"));
    // The subdirectory's session is newer than both exact ones, and still ranks after them.
    assert_eq!(ids(&got), vec!["exact-new", "exact-old", "sub-new"]);
    // From the subdirectory, `/home/u/proj` is a parent: not admitted.
    let below = ranked(
        &store,
        Agent::Claude,
        Scope::Cwd,
        Path::new("/home/u/proj/sub"),
    );
    assert_eq!(ids(&below), vec!["sub-new"]);
    // A folder whose name only starts with `proj` is beside it, not below it.
    let mut beside = store.clone();
    beside.push(claude("beside", "/home/u/proj2", None, false, 0));
    beside.push(claude("beside-deep", "/home/u/proj2/sub", None, false, 0));
    let got = ranked(
        &beside,
        Agent::Claude,
        Scope::Cwd,
        Path::new("/home/u/proj"),
    );
    assert_eq!(ids(&got), vec!["exact-new", "exact-old", "sub-new"]);
    let got = ranked(&beside, Agent::Claude, Scope::Cwd, Path::new("/home/u/pro"));
    assert!(got.is_empty(), "{:?}", ids(&got));
}

#[test]
fn scope_tree_ranks_exact_then_subdirectory_then_parent() {
    let store = scoped_store();
    let got = ranked(
        &store,
        Agent::Claude,
        Scope::Tree,
        Path::new("/home/u/proj"),
    );
    // The parent (the home folder) is the most recent of all, and still ranks last.
    assert_eq!(
        ids(&got),
        vec!["exact-new", "exact-old", "sub-new", "parent-newest"]
    );
}

#[test]
fn scope_any_admits_everything_by_recency() {
    let store = scoped_store();
    let got = ranked(&store, Agent::Claude, Scope::Any, Path::new("/home/u/proj"));
    assert_eq!(
        ids(&got),
        vec![
            "elsewhere",
            "parent-newest",
            "sub-new",
            "exact-new",
            "exact-old"
        ]
    );
}

#[test]
fn a_session_without_a_cwd_is_only_in_scope_any() {
    let mut lost = claude("no-cwd", "/x", None, false, 0);
    lost.cwd = None;
    let store = vec![lost];
    assert!(ranked(&store, Agent::Claude, Scope::Cwd, Path::new("/x")).is_empty());
    assert!(ranked(&store, Agent::Claude, Scope::Tree, Path::new("/x")).is_empty());
    assert_eq!(
        ranked(&store, Agent::Claude, Scope::Any, Path::new("/x")).len(),
        1
    );
}

#[test]
fn the_active_window_decides_is_active() {
    let window = ActiveWindow::default();
    assert_eq!(window.minutes(), 240);
    assert!(window.is_active(Some(UnixMillis(NOW.0 - 239 * MINUTE)), NOW));
    assert!(window.is_active(Some(UnixMillis(NOW.0 - 240 * MINUTE)), NOW));
    assert!(!window.is_active(Some(UnixMillis(NOW.0 - 241 * MINUTE)), NOW));
    assert!(!window.is_active(None, NOW));

    let short = ActiveWindow::from_minutes(5);
    assert!(!short.is_active(Some(UnixMillis(NOW.0 - 6 * MINUTE)), NOW));
    assert!(short.is_active(Some(UnixMillis(NOW.0 - 4 * MINUTE)), NOW));
}

#[test]
fn best_active_prefers_directory_rank_then_recency_among_active_sessions() {
    let store = vec![
        claude("exact-stale", "/p", None, false, 300),
        claude("exact-active", "/p", None, false, 100),
        claude("sub-newer", "/p/sub", None, false, 1),
        claude("parent-newest", "/", None, false, 0),
    ];
    let window = ActiveWindow::default();
    let cwd = Path::new("/p");
    let pick = |scope| {
        resolve::best_active(&store, Agent::Claude, scope, cwd, window, NOW, None)
            .map(|s| s.session_id.clone())
    };
    // The stale exact match is outside the window; the active exact match beats newer ones.
    assert_eq!(pick(Scope::Cwd).as_deref(), Some("exact-active"));
    assert_eq!(pick(Scope::Tree).as_deref(), Some("exact-active"));
    assert_eq!(pick(Scope::Any).as_deref(), Some("parent-newest"));

    // The caller's own session is never picked: the next best is the subdirectory's.
    let not_self = resolve::best_active(
        &store,
        Agent::Claude,
        Scope::Cwd,
        cwd,
        window,
        NOW,
        /*exclude*/ Some("exact-active"),
    )
    .map(|s| s.session_id.as_str());
    assert_eq!(not_self, Some("sub-newer"));

    // With a shorter window no exact match is active: `cwd` takes the subdirectory's session,
    // never the parent's, however recent.
    let short = ActiveWindow::from_minutes(60);
    let below = resolve::best_active(&store, Agent::Claude, Scope::Cwd, cwd, short, NOW, None)
        .map(|s| s.session_id.as_str());
    assert_eq!(below, Some("sub-newer"));
    let only_parent = vec![claude("parent-newest", "/", None, false, 0)];
    let none = resolve::best_active(
        &only_parent,
        Agent::Claude,
        Scope::Cwd,
        cwd,
        short,
        NOW,
        None,
    );
    assert_eq!(none, None);
}

#[test]
fn lookup_by_id() {
    let store = vec![
        claude("11111111-aaaa", "/p", Some("alpha"), true, 5),
        claude("22222222-bbbb", "/p", Some("beta"), true, 1),
    ];
    let found = lookup(&store, "11111111-aaaa", any(Agent::Claude)).unwrap();
    assert_eq!(found.session.session_id, "11111111-aaaa");
    assert_eq!(found.matched_by, MatchedBy::SessionId);

    // A prefix of an id is not an id.
    let err = lookup(&store, "11111111", any(Agent::Claude)).unwrap_err();
    assert!(matches!(err, StoreError::NoSuchSession { .. }), "{err}");

    // Another agent's id is not found under this agent.
    let err = lookup(&store, "11111111-aaaa", any(Agent::Codex)).unwrap_err();
    assert!(matches!(err, StoreError::NoSuchSession { .. }), "{err}");
}

#[test]
fn lookup_by_exact_assigned_name() {
    let store = vec![
        claude("s1", "/p", Some("billing-api"), true, 5),
        claude("s2", "/p", Some("billing-api-old-1"), true, 1),
    ];
    let found = lookup(&store, "billing-api", any(Agent::Claude)).unwrap();
    assert_eq!(found.session.session_id, "s1");
    assert_eq!(found.matched_by, MatchedBy::AssignedName);
    // Surrounding whitespace is not part of a name.
    let found = lookup(&store, "  billing-api ", any(Agent::Claude)).unwrap();
    assert_eq!(found.session.session_id, "s1");
}

#[test]
fn a_name_is_case_sensitive_and_whole() {
    let store = vec![claude("s1", "/p", Some("Billing-API"), true, 5)];
    for query in [
        "billing-api",
        "Billing",
        "API",
        "Billing-AP",
        "Billing-API2",
    ] {
        let err = lookup(&store, query, any(Agent::Claude)).unwrap_err();
        assert!(
            matches!(err, StoreError::NoSuchSession { .. }),
            "{query}: {err}"
        );
    }
}

#[test]
fn duplicate_names_are_refused_with_every_candidate() {
    let store = vec![
        claude("old", "/a", Some("studio"), true, 600),
        claude("new", "/b", Some("studio"), true, 5),
        // A generated title that happens to be the same text also answers to it.
        claude("gen", "/c", Some("studio"), false, 50),
        claude("other", "/d", Some("studio-v2"), true, 1),
    ];
    let err = lookup(&store, "studio", any(Agent::Claude)).unwrap_err();
    let StoreError::AmbiguousName {
        agent,
        name,
        candidates,
    } = &err
    else {
        panic!("expected an ambiguous name, got {err}");
    };
    assert_eq!(*agent, Agent::Claude);
    assert_eq!(name, "studio");
    let expected: Vec<Candidate> = ["new", "gen", "old"]
        .iter()
        .map(|id| Candidate::of(store.iter().find(|s| s.session_id == *id).unwrap()))
        .collect();
    assert_eq!(candidates, &expected);

    // The message names every candidate, when it was active, and the kind of its title.
    let message = err.to_string();
    for id in ["new", "gen", "old"] {
        assert!(message.contains(id), "{message}");
    }
    assert!(message.contains("name assigned"), "{message}");
    assert!(
        message.contains("title generated from its first message"),
        "{message}"
    );
    assert!(message.contains("last active 2027-"), "{message}");
    assert!(!message.contains("- other"), "{message}");
}

#[test]
fn a_word_inside_a_generated_title_does_not_match() {
    let store = vec![
        claude(
            "g1",
            "/p",
            Some("fix the koppa_studio build on CI"),
            false,
            5,
        ),
        claude("named", "/q", Some("koppa_studio"), true, 500),
    ];
    // The session *named* koppa_studio is found, not the one that mentions it.
    let found = lookup(&store, "koppa_studio", any(Agent::Claude)).unwrap();
    assert_eq!(found.session.session_id, "named");

    let err = lookup(&store, "build", any(Agent::Claude)).unwrap_err();
    assert!(matches!(err, StoreError::NoSuchSession { .. }), "{err}");
}

#[test]
fn a_whole_generated_title_matches_exactly_when_unique() {
    let store = vec![claude(
        "g1",
        "/p",
        Some("explain what this function does"),
        false,
        5,
    )];
    let found = lookup(
        &store,
        "explain what this function does",
        any(Agent::Claude),
    )
    .unwrap();
    assert_eq!(found.session.session_id, "g1");
    assert_eq!(found.matched_by, MatchedBy::GeneratedTitle);
}

#[test]
fn regex_and_glob_characters_match_only_themselves() {
    let store = vec![
        claude("plain-a", "/p", Some("a"), true, 1),
        claude("foo", "/p", Some("foo"), true, 2),
        claude("foobar", "/p", Some("foobar"), true, 3),
        claude("fooX", "/p", Some("fooX"), true, 4),
        claude("dotstar", "/p", Some("x.*"), true, 5),
        claude("star", "/p", Some("foo*"), true, 6),
    ];
    for query in [".*", "[a]", "?", "f?o", "fo.", "^foo$", "foo.+", "*"] {
        let err = lookup(&store, query, any(Agent::Claude)).unwrap_err();
        assert!(
            matches!(err, StoreError::NoSuchSession { .. }),
            "{query:?} must match nothing: {err}"
        );
    }
    let found = lookup(&store, "foo*", any(Agent::Claude)).unwrap();
    assert_eq!(found.session.session_id, "star");
    let found = lookup(&store, "x.*", any(Agent::Claude)).unwrap();
    assert_eq!(found.session.session_id, "dotstar");
}

#[test]
fn no_match_lists_similar_titles_without_choosing_one() {
    let store = vec![
        claude("case", "/p", Some("Billing-API"), true, 1),
        claude("contains", "/p", Some("billing-api-old-1"), true, 2),
        claude("typo", "/p", Some("biling-api"), false, 3),
        claude("far", "/p", Some("frontend"), true, 4),
    ];
    let err = lookup(&store, "billing-api", any(Agent::Claude)).unwrap_err();
    let StoreError::NoSuchSession { similar, .. } = &err else {
        panic!("expected not found, got {err}");
    };
    let titles: Vec<&str> = similar.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(
        titles,
        vec!["Billing-API", "billing-api-old-1", "biling-api"]
    );
    assert!(!similar[2].title_is_assigned);
    let message = err.to_string();
    assert!(message.contains("similar titles"), "{message}");
    assert!(message.contains("\"biling-api\""), "{message}");
    assert!(!message.contains("frontend"), "{message}");
}

#[test]
fn no_match_with_nothing_similar_says_so() {
    let store = vec![claude("s", "/p", Some("frontend"), true, 1)];
    let err = lookup(&store, "zzz-unknown", any(Agent::Claude)).unwrap_err();
    assert!(err.to_string().contains("no similar titles"), "{err}");
}

#[test]
fn renamed_session_answers_only_to_its_last_name() {
    // The readers fold every custom-title; the session carries the last. The old name is gone.
    let store = vec![claude("s1", "/p", Some("second-name"), true, 1)];
    assert!(lookup(&store, "second-name", any(Agent::Claude)).is_ok());
    let err = lookup(&store, "first-name", any(Agent::Claude)).unwrap_err();
    assert!(matches!(err, StoreError::NoSuchSession { .. }), "{err}");
}

fn bounded(limit: usize) -> Lookup<'static> {
    Lookup {
        bound: Some(ScanBound {
            limit,
            source: "CROSS_AGENT_NAME_SCAN_LIMIT",
        }),
        ..any(Agent::Claude)
    }
}

#[test]
fn no_bound_means_every_session_is_searched() {
    let mut store: Vec<Session> = (0..2_000)
        .map(|i| claude(&format!("s{i}"), "/p", Some(&format!("n{i}")), true, i))
        .collect();
    store.push(claude("oldest", "/p", Some("ancient"), true, 1_000_000));
    let found = lookup(&store, "ancient", any(Agent::Claude)).unwrap();
    assert_eq!(found.session.session_id, "oldest");
}

#[test]
fn a_name_matched_within_a_reached_bound_is_refused_with_the_count() {
    let store = vec![
        claude("s1", "/p", Some("target"), true, 1),
        claude("s2", "/p", Some("x"), true, 2),
        claude("s3", "/p", Some("target"), true, 3),
    ];
    // The bound (2) stops before the second "target": one match cannot prove uniqueness.
    let err = lookup(&store, "target", bounded(2)).unwrap_err();
    let StoreError::ScanBoundReached {
        reached,
        total,
        candidate,
        bound_setting,
        ..
    } = &err
    else {
        panic!("expected an unproven name, got {err}");
    };
    assert_eq!((*reached, *total), (2, 3));
    assert_eq!(candidate.session_id, "s1");
    assert_eq!(*bound_setting, "CROSS_AGENT_NAME_SCAN_LIMIT");
    let message = err.to_string();
    assert!(
        message.contains("among the 2 most recently active"),
        "{message}"
    );
    assert!(message.contains("3 sessions in all"), "{message}");

    // A bound that is not reached changes nothing: a unique name resolves.
    let found = lookup(&store, "x", bounded(3)).unwrap();
    assert_eq!(found.session.session_id, "s2");

    // No match within a reached bound says how far it got.
    let err = lookup(&store, "nothing", bounded(2)).unwrap_err();
    assert!(
        err.to_string()
            .contains("among the 2 most recently active of 3 sessions"),
        "{err}"
    );

    // An id is unique by construction and is found past the bound.
    let found = lookup(&store, "s3", bounded(1)).unwrap();
    assert_eq!(found.matched_by, MatchedBy::SessionId);
}

#[test]
fn a_scope_narrows_a_lookup() {
    let store = vec![
        claude("here", "/p", Some("dup"), true, 1),
        claude("there", "/q", Some("dup"), true, 2),
    ];
    let here = Lookup {
        scope: Scope::Cwd,
        cwd: Path::new("/p"),
        ..any(Agent::Claude)
    };
    let found = lookup(&store, "dup", here).unwrap();
    assert_eq!(found.session.session_id, "here");
    let err = lookup(&store, "dup", any(Agent::Claude)).unwrap_err();
    assert!(matches!(err, StoreError::AmbiguousName { .. }), "{err}");
}

/// Names and ids that collide every way they can: an id that is another session's title, a
/// title with surrounding spaces, generated and assigned titles alike, equal times.
fn arbitrary_store() -> impl Strategy<Value = Vec<Session>> {
    let one = (
        0..8u8,
        prop::sample::select(vec![
            None,
            Some("alpha"),
            Some(" alpha "),
            Some("beta"),
            Some("s3"),
            Some("Alpha"),
        ]),
        prop::sample::select(vec!["/a", "/a/b", "/c", "/"]),
        proptest::bool::ANY,
        0..4i64,
        proptest::bool::ANY,
    );
    prop::collection::vec(one, 0..24).prop_map(|sessions| {
        sessions
            .into_iter()
            .map(|(id, title, cwd, assigned, minutes_ago, codex)| {
                let agent = if codex { Agent::Codex } else { Agent::Claude };
                session(agent, &format!("s{id}"), cwd, title, assigned, minutes_ago)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The index only finds the candidates: every answer is the one the whole walk gives.
    #[test]
    fn a_lookup_through_the_name_index_answers_as_the_whole_walk(
        store in arbitrary_store(),
        query in prop::sample::select(vec!["alpha", " alpha", "beta", "s3", "s5", "Alpha", "gamma", ""]),
        scope in prop::sample::select(vec![Scope::Any, Scope::Cwd, Scope::Tree]),
        cwd in prop::sample::select(vec!["/a", "/a/b", "/c"]),
        bound in prop::option::of(1..6usize),
        codex in proptest::bool::ANY,
    ) {
        let asked = Lookup {
            agent: if codex { Agent::Codex } else { Agent::Claude },
            scope,
            cwd: Path::new(cwd),
            bound: bound.map(|limit| ScanBound { limit, source: "TEST_LIMIT" }),
        };
        let whole = resolve::lookup(&store, query, asked);
        let indexed = NameIndex::new(&store).lookup(&store, query, asked);
        prop_assert_eq!(outcome(&indexed), outcome(&whole));
    }

    /// The one-pass pick is the first of the ranked order that is active and not excluded —
    /// ties (the same id twice, the same time) go to the first in the listing's order.
    #[test]
    fn the_best_active_session_is_the_first_ranked_one_that_is_active(
        store in arbitrary_store(),
        scope in prop::sample::select(vec![Scope::Any, Scope::Cwd, Scope::Tree]),
        cwd in prop::sample::select(vec!["/a", "/a/b", "/c"]),
        window_min in 1..5u64,
        exclude in prop::option::of(prop::sample::select(vec!["s0", "s1", "s2"])),
        codex in proptest::bool::ANY,
    ) {
        let agent = if codex { Agent::Codex } else { Agent::Claude };
        let window = ActiveWindow::from_minutes(window_min);
        let cwd = Path::new(cwd);
        let sorted = ranked(&store, agent, scope, cwd)
            .into_iter()
            .find(|s| window.is_active(s.last_activity, NOW) && exclude != Some(s.session_id.as_str()));
        let picked = resolve::best_active(&store, agent, scope, cwd, window, NOW, exclude);
        prop_assert_eq!(picked.map(std::ptr::from_ref), sorted.map(std::ptr::from_ref));
    }
}
