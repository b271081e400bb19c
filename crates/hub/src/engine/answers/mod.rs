//! Answers (docs/spec/cross-agent-mcp.md §6, §9): pairing an answer with its request, recovery from the
//! transcript, late-answer watches and the return traffic — the [`Answers`] part, which owns its
//! state ([`LateWatches`], the watch loop) and holds what it needs: the store, the decisions
//! log, the event stream and its settings. Return traffic (`returns`: a settled request's
//! answer, a late answer, a progress notice queued for the sender's live panel) asks the rest
//! only through [`ReturnNeighbours`] (the live panels, the dispatcher's wake-up).
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cross_agent_decisions::DecisionLog;

use cross_agent_decisions::events;
use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState, TargetKey};
use cross_agent_protocol::events::EngineEvent;
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::UnixMillis;
use cross_agent_transports::run::{Ended, TurnOutcome};
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::broadcast;

use super::dispatch::off_async;
use super::withheld::withheld_hint;
use super::{EngineConfig, EngineInfo, LEASE_MS, REPLY_PREVIEW_CHARS, preview};
use crate::Agent;
use crate::db::HubDb;
use crate::envelope::AnswerKind;
use crate::envelope::{self};
use crate::records::{Job, Watch};
use crate::settings::CallSettings;

mod returns;

pub(super) use returns::{ReturnNeighbours, Returns};

/// The late-answer watches this daemon holds (their records live in `hub.db`), and the loop
/// that reads their transcripts.
#[derive(Default)]
pub(super) struct LateWatches {
    /// The requests watched, by delivery id.
    held: Mutex<HashSet<String>>,
    /// The loop ([`Answers::watch_loop`]), while it runs.
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl LateWatches {
    /// How many watches this daemon holds.
    pub(super) fn held(&self) -> usize {
        self.held.lock().len()
    }

    /// Holds none any more (handed over in `hub.db`).
    pub(super) fn let_go(&self) {
        self.held.lock().clear();
    }

    /// Keeps the watch loop, to stop at drain or shutdown.
    pub(super) fn set_loop(&self, handle: tokio::task::JoinHandle<()>) {
        *self.task.lock() = Some(handle);
    }

    /// Stops the watch loop, if it runs, and waits for it.
    pub(super) async fn stop_loop(&self) {
        let watcher = self.task.lock().take();
        if let Some(watcher) = watcher {
            watcher.abort();
            let _ = watcher.await;
        }
    }
}

/// The answers part: it pairs answers with their requests, reads them back when the transport
/// failed, and keeps the late-answer watches. It sees nothing of admission or dispatch.
pub(super) struct Answers {
    /// `hub.db`, shared with the other parts (one connection, one lock).
    db: Arc<Mutex<HubDb>>,
    decisions: DecisionLog,
    events: broadcast::Sender<EngineEvent>,
    /// This daemon, as a stopped delivery's error names it and as `hub.db` knows a watch's owner.
    pid: u32,
    generation: u64,
    /// How often the watched transcripts are read.
    poll: Duration,
    /// How long a recovered answer's watch runs.
    recovered_watch_secs: u64,
    /// Set while the daemon drains: a watch started now is left unowned in `hub.db`, for the
    /// daemon that follows.
    handing_over: AtomicBool,
    watches: LateWatches,
    /// Return traffic to the senders' live panels.
    returns: Returns,
}

/// A late answer recorded as a delivery of its own, to be pushed to the sender's live panel.
struct LateAnswer {
    /// The request it answers, as recorded (pointing at `late`).
    request: DeliveryRecord,
    late: DeliveryRecord,
    text: String,
}

impl Answers {
    pub(super) fn new(
        db: Arc<Mutex<HubDb>>,
        decisions: DecisionLog,
        events: broadcast::Sender<EngineEvent>,
        info: &EngineInfo,
        config: &EngineConfig,
        others: Box<dyn ReturnNeighbours>,
    ) -> Answers {
        Answers {
            returns: Returns::new(db.clone(), info.generation, others),
            db,
            decisions,
            events,
            pid: info.pid,
            generation: info.generation,
            poll: config.late_answer_poll,
            recovered_watch_secs: config.late_answer_watch_secs,
            handing_over: AtomicBool::new(false),
            watches: LateWatches::default(),
        }
    }

    fn db(&self) -> MutexGuard<'_, HubDb> {
        self.db.lock()
    }

    fn emit(&self, event: EngineEvent) {
        // An error only says nobody listens now.
        let _ = self.events.send(event);
    }

    /// The late-answer watches and their loop.
    pub(super) fn watches(&self) -> &LateWatches {
        &self.watches
    }

    /// Return traffic: answers, late answers and notices queued for the senders' panels.
    pub(super) fn returns(&self) -> &Returns {
        &self.returns
    }

    /// While set (the daemon drains), new watches are left for the next daemon.
    pub(super) fn set_handing_over(&self, handing_over: bool) {
        self.handing_over.store(handing_over, Ordering::SeqCst);
    }

    fn is_handing_over(&self) -> bool {
        self.handing_over.load(Ordering::SeqCst)
    }

    /// Starts the late-answer watch on a request whose answer did not carry its id.
    pub(super) fn start_watch(&self, record: &mut DeliveryRecord, watch_secs: u64) {
        if watch_secs == 0 || record.target_transcript.is_none() {
            return;
        }
        let Some(UnixMillis(since)) = record
            .started_at
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339)
        else {
            return;
        };
        let until = UnixMillis::now()
            .0
            .saturating_add(i64::try_from(watch_secs.saturating_mul(1000)).unwrap_or(i64::MAX));
        record.answer.late_answer_watch_until = Some(UnixMillis(until).to_rfc3339());
        match self.db().add_watch(&record.delivery_id, since, until) {
            // A draining daemon leaves the new watch unowned in hub.db, for its successor.
            Ok(()) if self.is_handing_over() => {}
            Ok(()) => {
                self.watches.held.lock().insert(record.delivery_id.clone());
            }
            Err(error) => tracing::warn!(%error, "could not start a late-answer watch"),
        }
    }

    /// Reads the watched transcripts every [`EngineConfig::late_answer_poll`] (20 s), and
    /// pushes each late answer found to its sender — not while the daemon hands over.
    pub(super) async fn watch_loop(self: Arc<Self>) {
        loop {
            if !self.is_handing_over() {
                // Reads the watched transcripts: off the async threads.
                let answers = self.clone();
                off_async(move || {
                    for found in answers.watch_once() {
                        answers.route_found_late_answer(found);
                    }
                })
                .await;
            }
            tokio::time::sleep(self.poll).await;
        }
    }

    /// Records a watched (or already closed) request's late answer and pushes it to its
    /// sender. Blocking.
    pub(super) fn late_answer_arrived(&self, request_delivery_id: &str, text: &str) {
        if let Some(found) = self.record_late_answer(request_delivery_id, text) {
            self.route_found_late_answer(found);
        }
    }

    /// Pushed to the sender's live panel as a LATE ANSWER, never by a resume.
    fn route_found_late_answer(&self, found: LateAnswer) {
        let LateAnswer {
            mut request,
            late,
            text,
        } = found;
        self.returns.route_late_answer(&mut request, &late, &text);
    }

    /// One look at the watched transcripts: the late answers found are recorded and handed
    /// back, to be pushed to their senders. Blocking.
    fn watch_once(&self) -> Vec<LateAnswer> {
        let poll = self.poll;
        let now = UnixMillis::now().0;
        let lease = i64::try_from(poll.as_millis())
            .unwrap_or(LEASE_MS)
            .saturating_mul(3)
            .max(LEASE_MS);
        let watches = match self.db().claim_watches(self.pid, now, now + lease) {
            Ok(watches) => watches,
            Err(error) => {
                tracing::warn!(%error, "could not read late-answer watches");
                return Vec::new();
            }
        };
        let mut found = Vec::new();
        let mut held = HashSet::new();
        // Many watches may follow one session: each transcript is read once per look.
        let mut transcripts: HashMap<PathBuf, Option<cross_agent_stores::turns::Transcript>> =
            HashMap::new();
        for watch in watches {
            let id = watch.record.delivery_id.clone();
            if now > watch.until_ms {
                let _ = self.db().end_watch(&id);
                continue;
            }
            let Some(path) = watch.record.target_transcript.as_deref().map(PathBuf::from) else {
                let _ = self.db().end_watch(&id);
                continue;
            };
            let transcript = transcripts.entry(path).or_insert_with_key(|path| {
                let mut warnings = cross_agent_stores::Warnings::default();
                recent_turns(watch.record.target_agent, path, &mut warnings).ok()
            });
            match transcript.as_ref().and_then(|t| late_answer(t, &watch)) {
                Some(text) => found.extend(self.record_late_answer(&id, &text)),
                None => {
                    held.insert(id);
                }
            }
        }
        *self.watches.held.lock() = held;
        found
    }

    /// A watched request's real answer arrived: it becomes its own delivery record (a
    /// `LATE ANSWER` naming the request), and the request's record points at it. Returns it,
    /// to be pushed to the sender's live panel.
    fn record_late_answer(&self, request_delivery_id: &str, text: &str) -> Option<LateAnswer> {
        let mut db = self.db();
        let Ok(Some(mut request)) = db.delivery(request_delivery_id) else {
            let _ = db.end_watch(request_delivery_id);
            return None;
        };
        let now = now_rfc3339();
        let mut late = request.clone();
        late.delivery_id = envelope::delivery_id();
        late.state = DeliveryState::Delivered;
        late.created_at = now.clone();
        late.started_at = None;
        late.finished_at = Some(now);
        late.expires_at = None;
        late.error = None;
        late.is_killed_by_timeout = false;
        late.is_stopped_with_carrier = false;
        late.is_reply_recovered = false;
        late.is_undelivered = false;
        late.is_orphaned = false;
        late.late_reply_delivery_id = None;
        late.reply_preview = Some(preview(text, REPLY_PREVIEW_CHARS));
        late.answer = cross_agent_protocol::bridge::AnswerMarks {
            reply_carries_request_id: true,
            reply_header: Some(envelope::reply_header(
                request.target_agent,
                request.target_session_id.as_deref(),
                &request.request_id,
                true,
                AnswerKind::Late {
                    request_delivery_id,
                },
            )),
            answers_delivery_id: Some(request_delivery_id.to_owned()),
            ..Default::default()
        };
        request.late_reply_delivery_id = Some(late.delivery_id.clone());
        let key = TargetKey::new(
            request.target_agent,
            request.target_session_id.as_deref().unwrap_or("?"),
        )
        .to_string();
        let inserted = db.insert_late_answer(&late, &key, UnixMillis::now().0, &request);
        drop(db);
        match inserted {
            Ok(()) => {
                self.decisions
                    .record(events::late_answer(&request, &late.delivery_id));
                self.emit(EngineEvent::LateAnswer {
                    request_delivery_id: request_delivery_id.to_owned(),
                    late_delivery_id: late.delivery_id.clone(),
                });
                tracing::info!(request = %request_delivery_id, late = %late.delivery_id, "a late answer arrived");
                Some(LateAnswer {
                    request,
                    late,
                    text: text.to_owned(),
                })
            }
            Err(error) => {
                tracing::warn!(%error, "could not record a late answer");
                None
            }
        }
    }
    /// Turns a finished run into the record's outcome.
    pub(super) fn settle(&self, record: &mut DeliveryRecord, outcome: TurnOutcome, job: &Job) {
        let agent = record.target_agent;
        let parsed = &outcome.parsed;
        match outcome.ended {
            Ended::Stopped => self.stopped_with_carrier(record),
            Ended::KilledByTimeout => self.killed_by_timeout(record, job),
            Ended::Exited(code) => {
                if let Some(tool) = &parsed.approval_blocked {
                    approval_blocked(record, tool);
                } else if let (Some(answer), None) = (&parsed.answer, &parsed.failure) {
                    let answer = match agent {
                        Agent::Grok => grok_after_last_tool(record, answer),
                        Agent::Claude | Agent::Codex | Agent::Copilot => answer.clone(),
                    };
                    self.pair_answer(record, &answer, None, watch_secs(job));
                } else {
                    self.cli_failed(record, &outcome, code, job);
                }
            }
        }
    }

    /// The daemon stopped and killed the peer's turn: failed, its answer read back.
    fn stopped_with_carrier(&self, record: &mut DeliveryRecord) {
        record.is_stopped_with_carrier = true;
        fail(
            record,
            format!(
                "stopped with its carrier: the daemon (pid {}, generation {}) stopped \
                 while the peer's turn ran, and killed it. Send again to retry",
                self.pid, self.generation
            ),
        );
        self.recover(record, "the daemon stopped and killed the peer's turn");
    }

    /// The turn went quiet past its timeout and was killed: failed, its answer read back.
    fn killed_by_timeout(&self, record: &mut DeliveryRecord, job: &Job) {
        record.is_killed_by_timeout = true;
        fail(
            record,
            format!(
                "killed by bridge timeout: no CLI output or transcript write for {} s",
                job.timeout_secs
            ),
        );
        let why = format!(
            "killed by bridge timeout after {} s without CLI output or transcript writes",
            job.timeout_secs
        );
        self.recover(record, &why);
    }

    /// The CLI exited without an answer: failed with what it said (a withheld variable
    /// first), and the answer looked for in the transcript.
    fn cli_failed(
        &self,
        record: &mut DeliveryRecord,
        outcome: &TurnOutcome,
        code: Option<i32>,
        job: &Job,
    ) {
        let agent = record.target_agent;
        let detail = failure_detail(outcome);
        let code = code.map_or_else(|| "none".to_owned(), |c| c.to_string());
        // A withheld variable leads, so the one-line summaries (the decision's
        // reason) carry it too.
        let error = match withheld_hint(agent, &detail, &outcome.stderr_tail, job) {
            Some(hint) => {
                format!("the {agent} CLI failed (exit code {code}): {hint}. It said: {detail}")
            }
            None => format!("the {agent} CLI failed (exit code {code}): {detail}"),
        };
        let why = error.clone();
        fail(record, error);
        // The turn may still have answered into its transcript.
        self.recover(record, &why);
    }

    /// Takes `text` as the request's answer, paired by its closing line (the last line that
    /// names any request id): this request's id makes it the answer whenever it was written;
    /// another request's id makes it that request's answer, and it is rejected; no id at all
    /// takes it by timing, marked `NO REQUEST ID … possibly interim`, with a late-answer watch.
    /// `recovered` names why the transport failed when the text was read back from the
    /// transcript. Returns whether the text was taken.
    pub(super) fn pair_answer(
        &self,
        record: &mut DeliveryRecord,
        text: &str,
        recovered: Option<&str>,
        watch_secs: u64,
    ) -> bool {
        let ids = cross_agent_stores::turns::closing_line(text)
            .map(cross_agent_stores::turns::request_ids)
            .unwrap_or_default();
        let carries = ids.contains(&record.request_id.as_str());
        if !carries && !ids.is_empty() {
            let note = format!(
                "the peer's answer ends with another request's id ({}), so it answers that \
                 request, not {}; it was not taken",
                ids.join(", "),
                record.request_id
            );
            record.state = DeliveryState::Failed;
            record.error = Some(match (&record.error, recovered) {
                (Some(error), Some(_)) => format!("{error}; {note}"),
                (Some(_) | None, None) | (None, Some(_)) => note,
            });
            self.start_watch(record, watch_secs);
            return false;
        }
        record.reply_preview = Some(preview(text, REPLY_PREVIEW_CHARS));
        record.answer.reply_carries_request_id = carries;
        record.answer.is_reply_possibly_interim = !carries;
        let kind = match recovered {
            Some(why) => {
                // The transport failed: the state says so, the answer is labelled as read back.
                record.is_reply_recovered = true;
                record.answer.transport_failure = Some(why.to_owned());
                AnswerKind::Recovered {
                    transport_failure: why,
                }
            }
            None => {
                record.state = DeliveryState::Delivered;
                if carries {
                    AnswerKind::Confirmed
                } else {
                    AnswerKind::NoRequestId
                }
            }
        };
        record.answer.reply_header = Some(envelope::reply_header(
            record.target_agent,
            record.target_session_id.as_deref(),
            &record.request_id,
            carries,
            kind,
        ));
        if !carries {
            self.start_watch(record, watch_secs);
        }
        true
    }

    /// A delivery that ended without an answer on stdout: the peer's transcript may hold one
    /// (`is_reply_recovered`) — a finished turn carrying the request id, else the last
    /// assistant message carrying it, else the last assistant message written after the
    /// hand-over, never anything from before it. Nothing is re-sent. A delivery never handed over looks nothing up. Returns whether one was found.
    pub(super) fn recover(&self, record: &mut DeliveryRecord, why: &str) -> bool {
        let found = match transcript_answer(record) {
            Some(text) => self.pair_answer(record, &text, Some(why), self.recovered_watch_secs),
            None => false,
        };
        self.decisions.record(events::recovery(record, found));
        found
    }
}

/// A Grok answer is what it said after its last tool call (docs/spec/cross-agent-mcp.md §9), but its stream
/// carries no tool events: the transcript splits its messages at each tool call. When the
/// transcript's answer for this delivery is how the streamed text ends, that tail is the
/// answer; otherwise the stream stands as it is.
pub(super) fn grok_after_last_tool(record: &DeliveryRecord, streamed: &str) -> String {
    match transcript_answer(record) {
        Some(tail) if !tail.trim().is_empty() && streamed.trim_end().ends_with(tail.trim()) => {
            tail.trim().to_owned()
        }
        Some(_) | None => streamed.to_owned(),
    }
}

/// The turns at the end of a peer's transcript, where answers are looked for (the spec's 2 MB
/// window, 8 MB for Grok): a long session is not read whole on every look.
pub(super) fn recent_turns(
    agent: Agent,
    path: &Path,
    warnings: &mut cross_agent_stores::Warnings,
) -> cross_agent_stores::Result<cross_agent_stores::turns::Transcript> {
    cross_agent_stores::turns::read_recent_turns(
        agent,
        path,
        cross_agent_stores::turns::answer_window(agent),
        warnings,
    )
}

/// What the peer's transcript holds as this delivery's answer: the final text of a finished turn
/// whose closing line carries the request id, else the last assistant message written after the
/// turn started that carries it, else the last one written after the turn started. `None` without a transcript, a start time, or such a message.
pub(super) fn transcript_answer(record: &DeliveryRecord) -> Option<String> {
    if record.target_agent == Agent::Copilot {
        return copilot_answer(record);
    }
    let started = UnixMillis::parse_rfc3339(record.started_at.as_deref()?)?;
    let path = PathBuf::from(record.target_transcript.as_deref()?);
    let mut warnings = cross_agent_stores::Warnings::default();
    let transcript = recent_turns(record.target_agent, &path, &mut warnings).ok()?;
    match transcript.finished_turn_answering(&record.request_id, Some(started)) {
        Some(turn) => turn.final_text().map(str::to_owned),
        None => transcript
            .last_assistant_message_answering(&record.request_id, started)
            .or_else(|| transcript.last_assistant_message_after(started))
            .map(|m| m.text.clone()),
    }
}

/// A Copilot delivery's answer as the SDK's `events.jsonl` (its "transcript") holds it: the
/// completed turn opened by the user message carrying the request token. A turn still running,
/// cancelled or failed has none.
fn copilot_answer(record: &DeliveryRecord) -> Option<String> {
    use cross_agent_stores::copilot::events::{TokenAnswer, answer_for_token};
    let path = PathBuf::from(record.target_transcript.as_deref()?);
    match answer_for_token(&path, &record.request_id).ok()? {
        TokenAnswer::Completed { text } if !text.trim().is_empty() => Some(text),
        TokenAnswer::Completed { .. }
        | TokenAnswer::NotFound
        | TokenAnswer::InProgress
        | TokenAnswer::Cancelled
        | TokenAnswer::Failed { .. } => None,
    }
}

/// `CROSS_AGENT_LATE_ANSWER_WATCH` of the caller's registration.
pub(super) fn watch_secs(job: &Job) -> u64 {
    CallSettings::from_settings(&job.settings).late_answer_watch_secs
}

/// The finished turn that carries a watched request's id, started after the request did.
pub(super) fn late_answer(
    transcript: &cross_agent_stores::turns::Transcript,
    watch: &Watch,
) -> Option<String> {
    transcript
        .finished_turn_answering(&watch.record.request_id, Some(UnixMillis(watch.since_ms)))
        .and_then(|turn| turn.final_text().map(str::to_owned))
}

/// Fails `record` with `error`.
fn fail(record: &mut DeliveryRecord, error: String) {
    record.state = DeliveryState::Failed;
    record.error = Some(error);
}

/// A headless turn cancelled for want of an approval nobody is there to give: failed, saying
/// which setting allows the tool.
fn approval_blocked(record: &mut DeliveryRecord, tool: &str) {
    let agent = record.target_agent;
    let setting = match agent {
        Agent::Claude => {
            "set CROSS_AGENT_CLAUDE_PERMISSION_MODE (acceptEdits, bypassPermissions) \
             in the sender's registration"
        }
        Agent::Codex => {
            "start the Codex session with a wider CROSS_AGENT_CODEX_SANDBOX, or \
             pre-approve the tool in its config"
        }
        // Grok applies only `default` and `bypassPermissions` from its command
        // line (its docs, as the public koan provider notes quote them).
        Agent::Grok => {
            "set CROSS_AGENT_GROK_PERMISSION_MODE=bypassPermissions in the \
             sender's registration"
        }
        // No headless turn is ever started for Copilot; said for completeness.
        Agent::Copilot => "answer the tool call in VS Code",
    };
    fail(
        record,
        format!(
            "the headless {agent} turn was cancelled for want of an approval \
             ({tool}): nobody is there to approve a tool call in a turn the \
             bridge starts. To allow it, {setting}, or send to a session open \
             in a panel"
        ),
    );
}

/// What a failed CLI said: its own failure, else its last five lines of stderr.
fn failure_detail(outcome: &TurnOutcome) -> String {
    outcome
        .parsed
        .failure
        .clone()
        .or_else(|| {
            let tail = outcome.stderr_tail.trim();
            (!tail.is_empty()).then(|| {
                tail.lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        })
        .unwrap_or_else(|| "it printed no answer".to_owned())
}
