//! The kept renderings' text in unnamed files of the state directory: off the heap, read back
//! whole by the listings, a listing's own text kept while new ones are made, the costs patched
//! into the file, and the heap kept when no file can be made.

use super::*;
use crate::render::Spent;

/// Costs of `cost` dollars and a few cents for each session.
fn costs(cost: &'static str) -> impl Fn(SessionRef<'_>) -> Spent {
    move |s: SessionRef<'_>| Spent {
        cost_usd: Some(format!("{cost}{}", &s.session_id()[1..])),
        tokens: Some(7),
    }
}

/// [`both`] with the costs of [`costs`]`(cost)` from a table of its own, told apart by `table`.
fn both_costed(
    live: &LiveScanner,
    roots: &StoreRoots,
    table: u8,
    cost: &'static str,
) -> (String, String) {
    let of = costs(cost);
    let table: SpentTable = Arc::new(table);
    both(
        live,
        roots,
        Some(ListingSpent {
            table: &table,
            of: &of,
            unmoved: None,
        }),
    )
}

#[test]
fn a_kept_text_is_in_a_file_not_on_the_heap_and_the_listing_is_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    for n in 0..40 {
        write_claude(tmp.path(), &format!("c{n:02}"), &format!("title {n}"));
    }
    let roots = StoreRoots::under_home(tmp.path());
    let live = quiet(tmp.path());
    let (got, want) = both(&live, &roots, None);
    assert_eq!(got, want);
    let bytes = live.heap_bytes();
    assert_eq!(bytes.sessions, 40);
    // The places of its elements only: 12 bytes a session (its capacity, 16).
    assert!(
        bytes.rendered <= 16 * bytes.sessions,
        "{} bytes of kept rendering on the heap for {} sessions",
        bytes.rendered,
        bytes.sessions
    );
    assert_eq!(
        bytes.rendered_in_files,
        want.len() - "{\n  \"claude\": [\n".len() - "\n  ]\n}\n".len()
    );
    // With costs (made again, moved to a new file) likewise.
    let (got, want) = both_costed(&live, &roots, 1, "1.00000");
    assert_eq!(got, want);
    assert!(live.heap_bytes().rendered <= 16 * 40);
    assert!(live.heap_bytes().rendered_in_files > 0);
}

/// A listing made and not yet written keeps the text it was made from while the walk makes a
/// new generation's (a session added, one renamed) and costs are spliced into it.
#[test]
fn a_listing_in_flight_keeps_its_text_while_new_ones_are_made() {
    let tmp = tempfile::tempdir().unwrap();
    let (roots, live) = two_sessions(tmp.path());
    let window = ActiveWindow::from_minutes(0);
    let now = UnixMillis(now_millis());
    let in_flight = live.render_listing(
        &roots,
        &[Agent::Claude],
        |_| true,
        None,
        (window, now, None),
    );
    let want = written_one_at_a_time(&live, &roots, (window, now), None);
    assert!(live.heap_bytes().rendered_in_files > 0, "kept in a file");

    write_claude(tmp.path(), "c3", "three");
    write_claude(tmp.path(), "c1", "one renamed");
    live.mark_stale(Agent::Claude);
    live.catch_up();
    let of = costs("2.00000");
    let table: SpentTable = Arc::new(2_u8);
    live.recost(
        &roots,
        ListingSpent {
            table: &table,
            of: &of,
            unmoved: None,
        },
    );
    let (now_got, now_want) = both(
        &live,
        &roots,
        Some(ListingSpent {
            table: &table,
            of: &of,
            unmoved: None,
        }),
    );
    assert_eq!(now_got, now_want);
    assert!(now_got.contains("one renamed") && now_got.contains("\"c3\""));

    assert_eq!(String::from_utf8(in_flight.bytes.to_vec()).unwrap(), want);
}

/// Costs that keep their length are patched into the kept file where they lie (nothing holds
/// the text), longer ones make a new text, kept in a file again: the listing carries the new
/// fields either way.
#[test]
fn recosted_fields_reach_the_listing_from_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (roots, live) = two_sessions(tmp.path());
    for (n, cost) in [
        (1_u8, "1.00000"),
        (2, "2.00000"),
        (3, "3.50000"),
        (4, "14.50000"),
    ] {
        let (got, want) = both_costed(&live, &roots, n, cost);
        assert_eq!(got, want);
        assert!(got.contains(&format!("\"cost_usd\": \"{cost}1\"")), "{got}");
        assert!(live.heap_bytes().rendered_in_files > 0, "kept in a file");
    }
    // And without costs, from the same costed text.
    let (got, want) = both(&live, &roots, None);
    assert_eq!(got, want);
}

/// A state directory where no file can be made (its path runs through a file): the text stays
/// on the heap, every listing is whole and the same bytes, and the log is told once.
#[test]
fn a_directory_where_no_file_can_be_made_keeps_the_text_in_memory_and_warns_once() {
    let tmp = tempfile::tempdir().unwrap();
    write_claude(tmp.path(), "c1", "one");
    write_claude(tmp.path(), "c2", "two");
    let roots = StoreRoots::under_home(tmp.path());
    let not_a_dir = tmp.path().join("state");
    std::fs::write(&not_a_dir, "a file").unwrap();
    let live = LiveScanner::new(
        ScanOptions {
            cache_file: Some(not_a_dir.join("cache.bin")),
            ..ScanOptions::default()
        },
        LiveOptions {
            rewalk: Duration::ZERO,
            notifications: false,
            serial_walks: false,
        },
    );
    for (n, cost) in [(1_u8, "1.00000"), (2, "12.00000")] {
        let (got, want) = both(&live, &roots, None);
        assert_eq!(got, want);
        let (got, want) = both_costed(&live, &roots, n, cost);
        assert_eq!(got, want);
    }
    let bytes = live.heap_bytes();
    assert_eq!(bytes.rendered_in_files, 0);
    assert!(bytes.rendered > 0);
    let dir = live.text_dir.as_ref().unwrap();
    assert_eq!(dir.path(), not_a_dir);
    assert_eq!(dir.warnings(), 1, "one warning for every text not kept");
}
