//! The live index's tests: generations, walks beside requests, the kept renderings.

use super::*;
use crate::model::Session;
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};

fn write_claude(home: &Path, id: &str, title: &str) {
    let now = now_millis();
    let mut t = ClaudeTranscript::new(home, "/work/p", id);
    t.user("start", now - 2_000).custom_title(title);
    t.write().unwrap();
}

fn ids(live: &LiveScanner, roots: &StoreRoots) -> Vec<String> {
    let snapshot = live.snapshot(roots, &[Agent::Claude]);
    let mut ids: Vec<String> = snapshot
        .sessions(Agent::Claude)
        .iter()
        .map(|s| s.session_id().to_owned())
        .collect();
    ids.sort();
    ids
}

/// Notifications off and a re-walk always due: only what the test does moves the index.
/// The Claude listing as written without anything kept, each session's cost (when `spent` is
/// given) looked up as it is written: what a kept listing must equal byte for byte.
fn written_one_at_a_time(
    live: &LiveScanner,
    roots: &StoreRoots,
    (window, now): (ActiveWindow, UnixMillis),
    spent: Option<crate::render::SpentOf<'_>>,
) -> String {
    let snapshot = live.snapshot(roots, &[Agent::Claude]);
    let whole = snapshot.sessions(Agent::Claude).to_sessions();
    let sessions: Vec<&Session> = whole.iter().collect();
    let chosen = [(Agent::Claude, Chosen::Sessions(sessions))];
    let mut want = Vec::new();
    crate::render::write_listing_spent(&mut want, &chosen, window, now, None, spent);
    String::from_utf8(want).unwrap()
}

/// A listing of `live`'s Claude sessions, read back whole, and the same listing written one
/// session at a time from the sessions (no kept text).
fn both(
    live: &LiveScanner,
    roots: &StoreRoots,
    spent: Option<ListingSpent<'_>>,
) -> (String, String) {
    let window = ActiveWindow::from_minutes(0);
    let now = UnixMillis(now_millis());
    let got = live.render_listing(
        roots,
        &[Agent::Claude],
        |_| true,
        None,
        (window, now, spent),
    );
    (
        String::from_utf8(got.bytes.to_vec()).unwrap(),
        written_one_at_a_time(live, roots, (window, now), spent.map(|spent| spent.of)),
    )
}

/// Claude sessions `c1` ("one") and `c2` ("two") under `dir`, and a quiet scanner of them.
fn two_sessions(dir: &Path) -> (StoreRoots, LiveScanner) {
    write_claude(dir, "c1", "one");
    write_claude(dir, "c2", "two");
    (StoreRoots::under_home(dir), quiet(dir))
}

fn quiet(dir: &Path) -> LiveScanner {
    LiveScanner::new(
        ScanOptions {
            cache_file: Some(dir.join("cache.bin")),
            ..ScanOptions::default()
        },
        LiveOptions {
            rewalk: Duration::ZERO,
            notifications: false,
            serial_walks: false,
        },
    )
}

#[test]
fn a_due_rewalk_is_the_timers_and_a_request_meanwhile_is_served_from_memory() {
    let tmp = tempfile::tempdir().unwrap();
    write_claude(tmp.path(), "c1", "one");
    let roots = StoreRoots::under_home(tmp.path());
    let live = quiet(tmp.path());
    assert_eq!(ids(&live, &roots), ["c1"]);
    write_claude(tmp.path(), "c2", "two");
    // The re-walk is due (interval zero) but no change was counted: the request does not
    // walk, it is served the generation held.
    assert_eq!(ids(&live, &roots), ["c1"]);
    live.catch_up();
    assert_eq!(ids(&live, &roots), ["c1", "c2"]);
}

#[test]
fn a_counted_change_is_walked_by_the_next_request() {
    let tmp = tempfile::tempdir().unwrap();
    write_claude(tmp.path(), "c1", "one");
    let roots = StoreRoots::under_home(tmp.path());
    let live = quiet(tmp.path());
    assert_eq!(ids(&live, &roots), ["c1"]);
    write_claude(tmp.path(), "c2", "two");
    live.mark_stale(Agent::Claude);
    assert_eq!(ids(&live, &roots), ["c1", "c2"]);
    // Resolution and the rendered listing read the same generation.
    let found = live.with_sessions(&roots, Agent::Claude, |sessions, _| sessions.len());
    assert_eq!(found, 2);
    let rendered = live.render_listing(
        &roots,
        &[Agent::Claude],
        |_| true,
        None,
        (
            ActiveWindow::from_minutes(240),
            UnixMillis(now_millis()),
            None,
        ),
    );
    assert_eq!(rendered.sessions, 2);
    let text = String::from_utf8(rendered.bytes.to_vec()).unwrap();
    assert!(text.contains("\"c2\""), "{text}");
}

#[test]
fn a_request_with_nothing_changed_does_not_wait_for_a_running_walk() {
    let tmp = tempfile::tempdir().unwrap();
    write_claude(tmp.path(), "c1", "one");
    let roots = StoreRoots::under_home(tmp.path());
    let live = Arc::new(quiet(tmp.path()));
    assert_eq!(ids(&live, &roots), ["c1"]);
    // A walk in progress holds the walk lock for as long as this test keeps it.
    let walking = live.walker.lock();
    let (sent, answered) = std::sync::mpsc::channel();
    let request = {
        let (live, roots) = (Arc::clone(&live), roots.clone());
        std::thread::spawn(move || sent.send(ids(&live, &roots)).unwrap())
    };
    // A bound against a hang, not a timing: a request that waited on the walk lock would
    // never answer while it is held.
    let got = answered.recv_timeout(Duration::from_secs(60));
    drop(walking);
    request.join().unwrap();
    assert_eq!(got.unwrap(), ["c1"]);
}

#[test]
fn a_change_counted_during_a_walk_leaves_the_agent_stale() {
    let tmp = tempfile::tempdir().unwrap();
    write_claude(tmp.path(), "c1", "one");
    let roots = StoreRoots::under_home(tmp.path());
    let live = quiet(tmp.path());
    assert_eq!(ids(&live, &roots), ["c1"]);
    // As a walk does: the count read before it, a change counted while it runs.
    let before = live.changes[agent_slot(Agent::Claude)].load(Ordering::SeqCst);
    live.mark_stale(Agent::Claude);
    {
        let mut shown = live.shown.lock();
        shown.seen[agent_slot(Agent::Claude)] = before;
    }
    assert!(live.current(&roots, &[Agent::Claude]).is_none());
    write_claude(tmp.path(), "c2", "two");
    assert_eq!(ids(&live, &roots), ["c1", "c2"]);
    assert!(live.current(&roots, &[Agent::Claude]).is_some());
}

/// What `name` resolves to among the held Claude sessions, through the index kept with them:
/// the id found, or the ids a refusal lists (none when nothing answers).
fn resolved(live: &LiveScanner, roots: &StoreRoots, name: &str) -> Result<String, Vec<String>> {
    let asked = crate::resolve::Lookup {
        agent: Agent::Claude,
        scope: crate::resolve::Scope::Any,
        cwd: Path::new("/"),
        bound: None,
    };
    live.with_named_sessions(roots, Agent::Claude, |sessions, names, _| {
        match names.lookup(sessions, name, asked) {
            Ok(found) => Ok(found.session.session_id().to_owned()),
            Err(crate::StoreError::AmbiguousName { candidates, .. }) => {
                let mut ids: Vec<String> = candidates.into_iter().map(|c| c.session_id).collect();
                ids.sort();
                Err(ids)
            }
            Err(_) => Err(Vec::new()),
        }
    })
}

/// The index of names is the generation's: a rename, a new session and a removed one are
/// answered as the store now has them — a stale index would still call `alpha` unique.
#[test]
fn the_name_index_follows_renames_additions_and_removals() {
    let tmp = tempfile::tempdir().unwrap();
    write_claude(tmp.path(), "c1", "alpha");
    write_claude(tmp.path(), "c2", "beta");
    let roots = StoreRoots::under_home(tmp.path());
    let live = quiet(tmp.path());
    assert_eq!(resolved(&live, &roots, "alpha"), Ok("c1".to_owned()));
    assert_eq!(resolved(&live, &roots, "beta"), Ok("c2".to_owned()));
    assert!(live.heap_bytes().names > 0, "the lookup made the index");

    // c2 renamed to c1's name: two sessions answer to it now, and none to the old name.
    write_claude(tmp.path(), "c2", "alpha");
    live.mark_stale(Agent::Claude);
    assert_eq!(
        resolved(&live, &roots, "alpha"),
        Err(vec!["c1".to_owned(), "c2".to_owned()])
    );
    assert_eq!(resolved(&live, &roots, "beta"), Err(Vec::new()));

    write_claude(tmp.path(), "c3", "gamma");
    live.mark_stale(Agent::Claude);
    assert_eq!(resolved(&live, &roots, "gamma"), Ok("c3".to_owned()));

    let held = live.snapshot(&roots, &[Agent::Claude]);
    let c1 = held
        .sessions(Agent::Claude)
        .iter()
        .find(|s| s.session_id() == "c1");
    std::fs::remove_file(c1.unwrap().path()).unwrap();
    live.mark_stale(Agent::Claude);
    assert_eq!(resolved(&live, &roots, "alpha"), Ok("c2".to_owned()));
    assert_eq!(resolved(&live, &roots, "c1"), Err(Vec::new()));
}

/// The cost fields kept beside a rendering are the table's that made them: a listing with the
/// same table is written from them (no cost looked up again), one with another table makes them
/// again — and either way the bytes are those of the listing written one session at a time.
#[test]
fn the_kept_cost_fields_are_made_again_for_another_table() {
    use crate::render::Spent;
    let tmp = tempfile::tempdir().unwrap();
    let (roots, live) = two_sessions(tmp.path());
    // None of them active in [`both`]'s window: every element is kept, so all go out in runs
    // with their costs.
    let listing = |table: &SpentTable, cost: &str| {
        let of = |s: SessionRef<'_>| Spent {
            cost_usd: (s.session_id() == "c1").then(|| cost.to_owned()),
            tokens: Some(7),
        };
        let spent = ListingSpent {
            table,
            of: &of,
            unmoved: None,
        };
        both(&live, &roots, Some(spent))
    };
    let first: SpentTable = Arc::new(1_u8);
    let (got, want) = listing(&first, "1.000000");
    assert_eq!(got, want);
    assert!(got.contains("\"cost_usd\": \"1.000000\""), "{got}");
    // The same table: the fields kept from the first listing, whatever `of` says now.
    let (got, _) = listing(&first, "2.000000");
    assert!(got.contains("\"cost_usd\": \"1.000000\""), "{got}");
    let second: SpentTable = Arc::new(2_u8);
    let (got, want) = listing(&second, "2.000000");
    assert_eq!(got, want);
    assert!(got.contains("\"cost_usd\": \"2.000000\""), "{got}");
}

/// The text with the cost fields spliced in is made again whenever what it shows moves: a cost
/// of one session (patched in place, made anew while a listing holds the old text, and anew for
/// a longer cost), and a session added by a walk — by the owner's timer ([`LiveScanner::recost`])
/// or by the listing itself. Each time the bytes are those written one session at a time, with
/// costs and without, and a listing already made keeps its own bytes.
#[test]
fn the_costed_text_is_made_again_when_a_cost_moves_or_a_session_is_added() {
    use crate::render::Spent;
    let tmp = tempfile::tempdir().unwrap();
    let (roots, live) = two_sessions(tmp.path());
    let window = ActiveWindow::from_minutes(0);
    let now = UnixMillis(now_millis());
    let of = |cost: &'static str| {
        move |s: SessionRef<'_>| Spent {
            cost_usd: (s.session_id() != "c2").then(|| format!("{cost}{}", &s.session_id()[1..])),
            tokens: Some(7),
        }
    };
    // The listing through the live index, and the one written without anything kept.
    let listing = |table: &SpentTable, cost: &'static str, timer: bool| {
        let of = of(cost);
        let spent = ListingSpent {
            table,
            of: &of,
            unmoved: None,
        };
        if timer {
            live.recost(&roots, spent);
        }
        let got = live.render_listing(
            &roots,
            &[Agent::Claude],
            |_| true,
            None,
            (window, now, Some(spent)),
        );
        assert_eq!(
            String::from_utf8(got.bytes.to_vec()).unwrap(),
            written_one_at_a_time(&live, &roots, (window, now), Some(&of))
        );
        // Without costs, from the same text.
        let bare = live.render_listing(
            &roots,
            &[Agent::Claude],
            |_| true,
            None,
            (window, now, None),
        );
        assert_eq!(
            String::from_utf8(bare.bytes.to_vec()).unwrap(),
            written_one_at_a_time(&live, &roots, (window, now), None)
        );
        got.bytes
    };
    let table = |n: u8| -> SpentTable { Arc::new(n) };
    let first = listing(&table(1), "1.00000", false);
    let made = first.to_vec();
    assert!(String::from_utf8_lossy(&made).contains("\"cost_usd\": \"1.000001\""));
    // One cost moves, a listing holding the text: a new text, the listing's bytes kept.
    let second = listing(&table(2), "2.50000", true);
    assert_eq!(first.to_vec(), made, "a listing made keeps its bytes");
    drop((first, second));
    // Nothing holds it now: patched in place, by the listing.
    listing(&table(3), "3.50000", false);
    // A longer cost, by the timer.
    listing(&table(4), "12.50000", true);
    // A session added: the walk carries the text over, its costs stale and the new one's
    // missing; made again by the timer, then by a listing — with the table of the listing
    // before the walk too (an accounting that did not move).
    write_claude(tmp.path(), "c3", "three");
    live.mark_stale(Agent::Claude);
    live.catch_up();
    let text = String::from_utf8(listing(&table(5), "5.00000", true).to_vec()).unwrap();
    assert!(text.contains("\"cost_usd\": \"5.000003\""), "{text}");
    let unmoved = table(6);
    listing(&unmoved, "6.00000", false);
    write_claude(tmp.path(), "c4", "four");
    live.mark_stale(Agent::Claude);
    let text = String::from_utf8(listing(&unmoved, "6.00000", false).to_vec()).unwrap();
    assert!(text.contains("\"cost_usd\": \"6.000004\""), "{text}");
}

/// A table that says which sessions moved since the table before it: a text carrying that
/// table's fields, none of whose sessions moved, is kept as it is (its fields not made again,
/// whatever `of` says now); one with a moved session, or carrying another table's fields, is
/// made again — each time the bytes of the listing written one session at a time.
#[test]
fn a_text_none_of_whose_sessions_moved_keeps_its_fields_for_the_next_table() {
    use super::{Unmoved, WeakTable};
    use crate::render::Spent;
    let tmp = tempfile::tempdir().unwrap();
    let (roots, live) = two_sessions(tmp.path());
    let listing =
        |table: &SpentTable, cost: &'static str, since: Option<(&SpentTable, &[&str])>| {
            let of = move |s: SessionRef<'_>| Spent {
                cost_usd: Some(format!("{cost}{}", &s.session_id()[1..])),
                tokens: Some(7),
            };
            let since = since.map(|(table, moved)| (Arc::downgrade(table) as WeakTable, moved));
            let moved = |id: &str| since.as_ref().is_some_and(|(_, moved)| moved.contains(&id));
            let spent = ListingSpent {
                table,
                of: &of,
                unmoved: since.as_ref().map(|(table, _)| Unmoved {
                    since: table,
                    moved: &moved,
                }),
            };
            both(&live, &roots, Some(spent))
        };
    let table = |n: u8| -> SpentTable { Arc::new(n) };
    let (first, second, third, fourth) = (table(1), table(2), table(3), table(4));
    let (got, want) = listing(&first, "1.00000", None);
    assert_eq!(got, want);
    // Nothing of this agent moved: the fields of the first table stay (not asked for again).
    let (got, _) = listing(&second, "2.00000", Some((&first, &["x9"])));
    assert!(got.contains("\"cost_usd\": \"1.000001\""), "{got}");
    // c1 moved: made again, whole.
    let (got, want) = listing(&third, "3.00000", Some((&second, &["c1"])));
    assert_eq!(got, want);
    assert!(got.contains("\"cost_usd\": \"3.000002\""), "{got}");
    // Nothing moved since a table other than the one the text carries: made again.
    let (got, want) = listing(&fourth, "4.00000", Some((&first, &[])));
    assert_eq!(got, want);
    assert!(got.contains("\"cost_usd\": \"4.000001\""), "{got}");
}

/// The sessions a daemon holds cost about what is their own (id, title, the rollout's time)
/// and a small record: the directories and path folders they share are kept once. At 111,000
/// sessions 140 bytes each is under 16 MB, where whole sessions took 350 each.
#[test]
fn the_held_sessions_take_at_most_140_bytes_each() {
    use cross_agent_testkit::synthetic_stores::CodexRollout;
    let tmp = tempfile::tempdir().unwrap();
    let start = now_millis() - 86_400_000;
    for n in 0..3_000_i64 {
        let id = format!("{n:08x}-5d2c-4b1e-9a7f-{:012x}", n * 7_919);
        let cwd = format!("/home/dev/work/project-{:03}", n % 20);
        let at = start + n * 20_000;
        let prompt = format!("fix the failing test in module {}", n % 37);
        if n % 3 == 2 {
            let mut rollout = CodexRollout::new(tmp.path(), &cwd, &id, at);
            rollout.user(&prompt, at + 1_000);
            rollout.write().unwrap();
        } else {
            let mut transcript = ClaudeTranscript::new(tmp.path(), &cwd, &id);
            transcript.user(&prompt, at);
            transcript.write().unwrap();
        }
    }
    let roots = StoreRoots::under_home(tmp.path());
    let live = quiet(tmp.path());
    let snapshot = live.snapshot(&roots, &[Agent::Claude, Agent::Codex]);
    let listed: usize = snapshot
        .agents()
        .map(|agent| snapshot.sessions(agent).len())
        .sum();
    assert_eq!(listed, 3_000);
    let bytes = live.heap_bytes();
    assert_eq!(bytes.sessions, 3_000);
    let each = (bytes.session_records + bytes.session_strings) / bytes.sessions;
    assert!(each <= 140, "{each} bytes a held session");
}

mod kept_files;
