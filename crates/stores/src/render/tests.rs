//! The listing's bytes held to serde_json's pretty printer over the whole map, kept renderings
//! and their parts, costs and active sessions.

use std::path::PathBuf;

use super::sink::Part;
use super::*;

/// The listing as it was printed before it was kept rendered: serde_json's pretty printer
/// over the whole map.
fn printed_whole(
    agents: &[(Agent, Vec<&Session>)],
    window: ActiveWindow,
    now: UnixMillis,
) -> Vec<u8> {
    struct ByAgent<'a>(Vec<(Agent, Vec<SessionView<'a>>)>);
    impl Serialize for ByAgent<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = serializer.serialize_map(Some(self.0.len()))?;
            for (agent, entries) in &self.0 {
                map.serialize_entry(agent.as_str(), entries)?;
            }
            map.end()
        }
    }
    let by_agent = ByAgent(
        agents
            .iter()
            .map(|(a, s)| {
                (
                    *a,
                    s.iter()
                        .map(|s| SessionView::new(*s, window, now))
                        .collect(),
                )
            })
            .collect(),
    );
    let mut out = Vec::new();
    serde_json::to_writer_pretty(&mut out, &by_agent).unwrap();
    out.push(b'\n');
    out
}

fn session(agent: Agent, n: i64, title: Option<&str>, cwd: Option<&str>) -> Session {
    Session {
        agent,
        session_id: format!("s-{n}"),
        cwd: cwd.map(PathBuf::from),
        title: title.map(str::to_owned),
        title_is_assigned: n % 2 == 0,
        first_activity: None,
        last_activity: (n % 5 != 0).then_some(UnixMillis(1_796_000_000_000 - n * 3_600_000)),
        is_working: n % 3 == 0,
        path: PathBuf::from(format!("/h/.claude/projects/p/s-{n}.jsonl")),
        copilot: None,
    }
}

#[test]
fn the_kept_and_the_fresh_listing_are_the_pretty_printers_bytes() {
    let awkward = "quote \" backslash \\ newline \n tab \t nul \u{0} é 日本 \u{2028} 😀";
    let claude: Vec<Session> = (0..12)
        .map(|n| {
            let title = match n % 4 {
                0 => None,
                1 => Some(awkward),
                _ => Some("fix the parser"),
            };
            session(
                Agent::Claude,
                n,
                title,
                (n % 3 != 1).then_some("/work/a \"b\"\nc"),
            )
        })
        .collect();
    let grok = vec![session(Agent::Grok, 7, Some("g"), None)];
    let now = UnixMillis(1_796_000_060_000);
    for window in [
        ActiveWindow::from_minutes(0),
        ActiveWindow::default(),
        ActiveWindow::from_minutes(100_000),
    ] {
        let chosen: Vec<(Agent, Vec<&Session>)> = vec![
            (Agent::Claude, claude.iter().collect()),
            (Agent::Codex, Vec::new()),
            (Agent::Grok, grok.iter().collect()),
        ];
        let want = printed_whole(&chosen, window, now);

        let mut fresh = Vec::new();
        let as_sessions: Vec<(Agent, Chosen<'_>)> = chosen
            .iter()
            .map(|(a, s)| (*a, Chosen::Sessions(s.clone())))
            .collect();
        write_listing(&mut fresh, &as_sessions, window, now, None);
        assert_eq!(
            String::from_utf8_lossy(&fresh),
            String::from_utf8_lossy(&want)
        );

        let kept = [
            RenderedAgent::new(&claude),
            RenderedAgent::default(),
            RenderedAgent::new(&grok),
        ];
        let lists = [
            HeldSessions::new(&claude),
            HeldSessions::default(),
            HeldSessions::new(&grok),
        ];
        let as_kept: Vec<(Agent, Chosen<'_>)> = chosen
            .iter()
            .zip(lists.iter().zip(&kept))
            .map(|((a, s), (sessions, rendered))| {
                (
                    *a,
                    Chosen::Kept {
                        sessions,
                        rendered,
                        indices: (0..s.len()).collect(),
                        costs_kept: false,
                    },
                )
            })
            .collect();
        let mut from_kept = Vec::new();
        write_listing(&mut from_kept, &as_kept, window, now, None);
        assert_eq!(
            String::from_utf8_lossy(&from_kept),
            String::from_utf8_lossy(&want)
        );
    }
}

/// With what each session cost, the kept and the fresh listing are still the printer's
/// bytes: the two fields last, a known cost as a string, unknown ones `null`.
#[test]
fn the_listing_with_costs_is_the_pretty_printers_bytes() {
    #[derive(Serialize)]
    struct WithSpent<'a> {
        #[serde(flatten)]
        view: SessionView<'a>,
        cost_usd: Option<String>,
        usage_tokens: Option<u64>,
    }
    let spent_of = |s: SessionRef<'_>| match s.session_id() {
        "s-1" => Spent {
            cost_usd: Some("1.234567".into()),
            tokens: Some(45_000),
        },
        "s-2" => Spent {
            cost_usd: None,
            tokens: Some(7),
        },
        _ => Spent::default(),
    };
    let claude: Vec<Session> = (0..4)
        .map(|n| session(Agent::Claude, n, Some("t \"q\""), Some("/w")))
        .collect();
    let held = HeldSessions::new(&claude);
    let now = UnixMillis(1_796_000_060_000);
    // One window where some are active (serialised afresh), one where none are.
    for window in [
        ActiveWindow::from_minutes(100_000),
        ActiveWindow::from_minutes(0),
    ] {
        let elements: Vec<WithSpent<'_>> = claude
            .iter()
            .map(|s| {
                let spent = spent_of(s.into());
                WithSpent {
                    view: SessionView::new(s, window, now),
                    cost_usd: spent.cost_usd,
                    usage_tokens: spent.tokens,
                }
            })
            .collect();
        let mut want = Vec::new();
        let mut map = std::collections::BTreeMap::new();
        map.insert("claude", elements);
        serde_json::to_writer_pretty(&mut want, &map).unwrap();
        want.push(b'\n');

        let bare = RenderedAgent::new(&claude);
        let costed = RenderedAgent::with_costs(&claude, &spent_of);
        // Other costs spliced in: the listing looks its own up, each session on its own.
        let stale = RenderedAgent::with_costs(&claude, &|_: SessionRef<'_>| Spent::default());
        for (chosen, rendered) in [
            (Chosen::Sessions(claude.iter().collect()), &bare),
            (
                Chosen::Kept {
                    sessions: &held,
                    rendered: &bare,
                    indices: (0..claude.len()).collect(),
                    costs_kept: false,
                },
                &bare,
            ),
            (
                Chosen::Kept {
                    sessions: &held,
                    rendered: &stale,
                    indices: (0..claude.len()).collect(),
                    costs_kept: false,
                },
                &stale,
            ),
            (
                Chosen::Kept {
                    sessions: &held,
                    rendered: &costed,
                    indices: (0..claude.len()).collect(),
                    costs_kept: true,
                },
                &costed,
            ),
        ] {
            let costs_kept = matches!(
                chosen,
                Chosen::Kept {
                    costs_kept: true,
                    ..
                }
            );
            let chosen = [(Agent::Claude, chosen)];
            let mut got = Vec::new();
            write_listing_spent(&mut got, &chosen, window, now, None, Some(&spent_of));
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            );
            // As the daemon sends it: kept elements referred to up to their cost fields,
            // the costs made for the listing after each, or runs of the text with the
            // listing's costs spliced in.
            let mut parts = ListingParts::default();
            write_listing_spent(&mut parts, &chosen, window, now, None, Some(&spent_of));
            assert_parts_are(&parts, rendered, &want);
            if costs_kept && window.minutes() == 0 {
                let kept: Vec<&Part> = parts
                    .parts
                    .iter()
                    .filter(|part| !matches!(part, Part::Made(_)))
                    .collect();
                assert_eq!(
                    kept,
                    [&Part::Kept {
                        agent: 0,
                        range: 0..costed.text.len()
                    }],
                    "with costs kept, the kept sessions go out as one slice"
                );
            }
        }
        // Without costs from the text with them: the costless listing.
        let chosen = [(
            Agent::Claude,
            Chosen::Kept {
                sessions: &held,
                rendered: &costed,
                indices: (0..claude.len()).collect(),
                costs_kept: true,
            },
        )];
        let mut parts = ListingParts::default();
        write_listing(&mut parts, &chosen, window, now, None);
        let want = printed_whole(&[(Agent::Claude, claude.iter().collect())], window, now);
        assert_parts_are(&parts, &costed, &want);
    }
}

#[test]
fn an_updated_rendering_equals_a_fresh_one() {
    let before: Vec<Session> = (1..8)
        .map(|n| session(Agent::Claude, n, Some("t"), Some("/w")))
        .collect();
    let kept = RenderedAgent::new(&before);
    let mut after = before.clone();
    after[2].title = Some("renamed".into());
    after.remove(4);
    after.insert(0, session(Agent::Claude, 99, Some("new"), None));
    let updated = RenderedAgent::update(&before, &kept, &after);
    let fresh = RenderedAgent::new(&after);
    assert_eq!(updated.ends, fresh.ends);
    assert_eq!(
        String::from_utf8_lossy(&updated.text),
        String::from_utf8_lossy(&fresh.text)
    );
    assert!(String::from_utf8_lossy(&updated.text).contains("\"renamed\""));
}

#[test]
fn a_listing_in_parts_is_the_same_bytes_and_refers_to_the_kept_runs() {
    let now = UnixMillis(1_796_000_060_000);
    // Session 0 is active (serialised afresh), 3 is left out by the caller: the others go
    // out as two runs of the kept text.
    let mut claude: Vec<Session> = (1..8)
        .map(|n| session(Agent::Claude, n, Some("t"), Some("/w")))
        .collect();
    claude[0].last_activity = Some(UnixMillis(now.0 - 1_000));
    let held = HeldSessions::new(&claude);
    let rendered = RenderedAgent::new(&claude);
    let window = ActiveWindow::from_minutes(1);
    let picked = vec![0, 1, 2, 4, 5, 6];
    let chosen = || {
        vec![(
            Agent::Claude,
            Chosen::Kept {
                sessions: &held,
                rendered: &rendered,
                indices: picked.clone(),
                costs_kept: false,
            },
        )]
    };
    let want = printed_whole(
        &[(Agent::Claude, picked.iter().map(|&i| &claude[i]).collect())],
        window,
        now,
    );
    let mut parts = ListingParts::default();
    write_listing(&mut parts, &chosen(), window, now, None);
    assert_parts_are(&parts, &rendered, &want);
    let kept: Vec<_> = parts
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Kept { range, .. } => Some(range.clone()),
            Part::Made(_) | Part::Bare { .. } => None,
        })
        .collect();
    assert_eq!(
        kept,
        [rendered.run(1, 2), rendered.run(4, 6)],
        "the runs of kept sessions are referred to, not copied"
    );
    let mut written = WriteSink::new(Vec::new());
    write_listing(&mut written, &chosen(), window, now, None);
    assert_eq!(written.finish().unwrap(), want);
}

#[test]
fn a_subset_and_no_agents_print_as_the_printer_would() {
    let claude: Vec<Session> = (1..6)
        .map(|n| session(Agent::Claude, n, Some("t"), Some("/w")))
        .collect();
    let held = HeldSessions::new(&claude);
    let now = UnixMillis(1_796_000_060_000);
    let window = ActiveWindow::default();
    let picked = vec![1, 3];
    let want = printed_whole(
        &[(Agent::Claude, picked.iter().map(|&i| &claude[i]).collect())],
        window,
        now,
    );
    let rendered = RenderedAgent::new(&claude);
    let mut got = Vec::new();
    write_listing(
        &mut got,
        &[(
            Agent::Claude,
            Chosen::Kept {
                sessions: &held,
                rendered: &rendered,
                indices: picked,
                costs_kept: false,
            },
        )],
        window,
        now,
        None,
    );
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want)
    );
    let mut none = Vec::new();
    write_listing(&mut none, &[], window, now, None);
    assert_eq!(none, printed_whole(&[], window, now));
}

/// `parts`, joined over the kept `rendered` text, are `want`'s bytes, and say their length.
fn assert_parts_are(parts: &ListingParts, rendered: &RenderedAgent, want: &[u8]) {
    let mut joined: Vec<u8> = Vec::new();
    let mut chunks = parts.chunks(|_| Some(rendered));
    while let Some(chunk) = chunks.next() {
        joined.extend_from_slice(chunk.unwrap());
    }
    assert_eq!(
        String::from_utf8_lossy(&joined),
        String::from_utf8_lossy(want)
    );
    assert_eq!(parts.len(), want.len());
}

/// A kept text read back from its file: a full listing and one picking elements (through the
/// window) are the printer's bytes; a file that no longer holds the text (cut short under the
/// listing) is an error naming the directory — the chunks end there, never short as if whole.
#[test]
fn a_kept_file_is_read_back_whole_or_the_listing_fails_naming_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let claude: Vec<Session> = (1..200)
        .map(|n| session(Agent::Claude, n, Some("t"), Some("/w")))
        .collect();
    let now = UnixMillis(1_796_000_060_000);
    let window = ActiveWindow::from_minutes(0);
    let held = HeldSessions::new(&claude);
    let mut rendered = RenderedAgent::new(&held);
    rendered.keep_in(&TextDir::new(tmp.path()));
    assert!(rendered.heap_text().is_none(), "kept in a file");
    let picked: Vec<usize> = (0..claude.len()).filter(|i| i % 3 != 1).collect();
    let listing = |indices: &[usize]| {
        let chosen = [(
            Agent::Claude,
            Chosen::Kept {
                sessions: &held,
                rendered: &rendered,
                indices: indices.to_vec(),
                costs_kept: false,
            },
        )];
        let mut parts = ListingParts::default();
        write_listing(&mut parts, &chosen, window, now, None);
        parts
    };
    for indices in [(0..claude.len()).collect(), picked] {
        let want = printed_whole(
            &[(Agent::Claude, indices.iter().map(|&i| &claude[i]).collect())],
            window,
            now,
        );
        assert_parts_are(&listing(&indices), &rendered, &want);
    }

    let parts = listing(&(0..claude.len()).collect::<Vec<_>>());
    rendered.file.as_ref().unwrap().file().set_len(100).unwrap();
    let mut chunks = parts.chunks(|_| Some(&rendered));
    let mut read = 0;
    let error = loop {
        match chunks.next() {
            Some(Ok(chunk)) => read += chunk.len(),
            Some(Err(error)) => break error,
            None => panic!("the listing ended as if whole after {read} bytes"),
        }
    };
    assert!(
        error
            .to_string()
            .contains(&tmp.path().display().to_string()),
        "{error}"
    );
    assert!(chunks.next().is_none(), "nothing after the error");
    assert!(read < parts.len());
}

/// A long run of a text kept in a file is given to a writer that sends from files as the file's
/// range (no buffer of ours copies it); joined with the other pieces it is the printer's bytes.
/// [`Chunks::next`] reads the same run into its buffer.
#[test]
fn a_long_kept_run_is_a_file_piece_and_the_pieces_are_the_listing() {
    use std::os::unix::fs::FileExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let claude: Vec<Session> = (1..2_000)
        .map(|n| session(Agent::Claude, n, Some("t"), Some("/w")))
        .collect();
    let now = UnixMillis(1_796_000_060_000);
    let window = ActiveWindow::from_minutes(0);
    let held = HeldSessions::new(&claude);
    let mut rendered = RenderedAgent::new(&held);
    rendered.keep_in(&TextDir::new(tmp.path()));
    assert!(
        rendered.text_len() > super::chunks::CHUNK,
        "a run longer than a chunk"
    );
    let chosen = [(
        Agent::Claude,
        Chosen::Kept {
            sessions: &held,
            rendered: &rendered,
            indices: (0..claude.len()).collect(),
            costs_kept: false,
        },
    )];
    let mut parts = ListingParts::default();
    write_listing(&mut parts, &chosen, window, now, None);
    let want = printed_whole(&[(Agent::Claude, claude.iter().collect())], window, now);

    let mut joined = Vec::new();
    let mut from_file = 0;
    let mut pieces = parts.chunks(|_| Some(&rendered));
    while let Some(piece) = pieces.next_piece() {
        match piece.unwrap() {
            Piece::Bytes(bytes) => joined.extend_from_slice(bytes),
            Piece::File { file, at, len } => {
                let mut bytes = vec![0; len];
                file.read_exact_at(&mut bytes, at).unwrap();
                joined.extend_from_slice(&bytes);
                from_file += len;
            }
        }
    }
    assert!(
        from_file >= super::chunks::CHUNK,
        "sent from the file: {from_file} bytes"
    );
    assert_eq!(
        String::from_utf8_lossy(&joined),
        String::from_utf8_lossy(&want)
    );
    assert_parts_are(&parts, &rendered, &want);
}
