//! Requests addressed to other machines' sessions (docs/remote.md, "Addressing"): `on_host`
//! forwarded over a host's link, `send_forwarded` taken from another machine's daemon,
//! `decisions_query`, and the follower that keeps the records of forwarded sends in step
//! with the remote records.
//!
//! A send to a remote session is accepted here and recorded here first (the engine's
//! `record_remote_send`), then forwarded with that delivery id in one call on the link; the
//! remote daemon delivers it through its own doors and records it under the same id. The
//! follower asks the remote's `bridge_status(delivery_id)` for every forwarded delivery not
//! finished yet, whenever its link is up, and copies the remote record's state and answer
//! here — so a link that dropped mid-delivery loses nothing when it comes back, and only a
//! delivery the remote has no record of (the link dropped before the send got there) ends
//! "outcome unknown". Nothing is ever re-sent.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use cross_agent_hosts::Links;
use cross_agent_hub::Engine;
use cross_agent_ipc::Error as IpcError;
use cross_agent_protocol::Agent;
use cross_agent_protocol::bridge::{
    BridgeStatusParams, CallerContext, IndexResolve, IndexSessionsParams, ListSessionsParams,
    ListSessionsResponse, Refusal, RefusalReason, Scope, SendParams, SendResponse,
};
use cross_agent_protocol::hosts::{
    ALL_HOSTS, DecisionGroup, DecisionRecord, DecisionsQueryParams, DecisionsQueryResponse,
    HostCall, OnHostParams, OnHostResponse, SendForwardedParams, UnreachableHost,
};
use cross_agent_protocol::rpc::{ErrorCode, Method, RpcError};
use parking_lot::Mutex;
use serde_json::json;

/// How long one forwarded call may take before it counts as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How often the follower looks at the forwarded deliveries not finished yet.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

/// The sends being forwarded right now: the follower leaves them alone until the forwarding
/// call has ended (their remote record may not exist yet).
#[derive(Debug, Default)]
pub(crate) struct Forwarding {
    ids: Mutex<HashSet<String>>,
}

/// What a forwarded call failed with.
enum CallError {
    /// The link is not up, or dropped during the call: the remote may or may not have it.
    Link(String),
    /// The remote answered with an error: it did not take the request.
    Remote(String),
}

impl CallError {
    fn message(&self) -> &str {
        match self {
            CallError::Link(message) | CallError::Remote(message) => message,
        }
    }
}

/// One call on `host`'s link.
async fn call<M: Method>(links: &Links, host: &str, params: M) -> Result<M::Response, CallError> {
    let Some(client) = links.client(host) else {
        return Err(CallError::Link(not_connected(links, host)));
    };
    match tokio::time::timeout(CALL_TIMEOUT, client.call(params)).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(IpcError::Rpc { code, message, .. })) => {
            let hint = if code == ErrorCode::MethodNotFound {
                "; that host runs an older cross-agent: install the same release on both"
            } else {
                ""
            };
            Err(CallError::Remote(format!(
                "host `{host}` answered `{}`: {message}{hint}",
                M::NAME
            )))
        }
        Ok(Err(error)) => Err(CallError::Link(format!(
            "the link to host `{host}` failed during `{}`: {error}",
            M::NAME
        ))),
        Err(_) => Err(CallError::Link(format!(
            "host `{host}` did not answer `{}` within {} s",
            M::NAME,
            CALL_TIMEOUT.as_secs()
        ))),
    }
}

/// Why `host` cannot be asked now, in words naming it and its link's state.
fn not_connected(links: &Links, host: &str) -> String {
    let status = links.status();
    match status.hosts.iter().find(|h| h.name == host) {
        None => {
            let known: Vec<&str> = status.hosts.iter().map(|h| h.name.as_str()).collect();
            format!(
                "there is no host `{host}` in hosts.toml (known: {}); add it with `cross-agent \
                 hosts add {host} DESTINATION`",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )
        }
        Some(h) => format!(
            "host `{host}` is not connected (link {}{}); see `cross-agent hosts status`",
            h.state.as_str(),
            h.last_error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
    }
}

/// The hosts of `hosts.toml`, by name.
pub(crate) fn host_names(links: &Links) -> Vec<String> {
    links.status().hosts.into_iter().map(|h| h.name).collect()
}

/// Every host of the links asked at once (`ask(links, host)`), started when this is made so the
/// caller can do its own share meanwhile; [`Asking::answers`] waits for them all.
pub(crate) struct Asking<T> {
    asked: Vec<(String, tokio::task::JoinHandle<Result<T, String>>)>,
}

pub(crate) fn ask_every_host<T, F, Fut>(links: &Links, ask: F) -> Asking<T>
where
    T: Send + 'static,
    F: Fn(Links, String) -> Fut,
    Fut: std::future::Future<Output = Result<T, String>> + Send + 'static,
{
    let asked = host_names(links)
        .into_iter()
        .map(|host| {
            let task = tokio::spawn(ask(links.clone(), host.clone()));
            (host, task)
        })
        .collect();
    Asking { asked }
}

impl<T> Asking<T> {
    /// Each host's answer or why there is none, in host order: a task that ended without an
    /// answer is that host's error, never a host silently missing from a merge.
    pub(crate) async fn answers(self) -> Vec<(String, Result<T, String>)> {
        let mut answers = Vec::with_capacity(self.asked.len());
        for (host, task) in self.asked {
            let answer = task
                .await
                .unwrap_or_else(|e| Err(format!("asking host `{host}` failed: {e}")));
            answers.push((host, answer));
        }
        answers.sort_by(|a, b| a.0.cmp(&b.0));
        answers
    }
}

fn error(message: String) -> RpcError {
    RpcError::new(ErrorCode::InvalidParams, message)
}

fn internal(message: String) -> RpcError {
    RpcError::new(ErrorCode::Internal, message)
}

/// Runs an engine call off the async threads.
async fn blocking<T: Send + 'static>(
    engine: &Engine,
    call: impl FnOnce(Engine) -> cross_agent_hub::Result<T> + Send + 'static,
) -> Result<T, RpcError> {
    let engine = engine.clone();
    match tokio::task::spawn_blocking(move || call(engine)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(internal(e.to_string())),
        Err(e) => Err(internal(format!("the daemon failed while answering: {e}"))),
    }
}

fn to_value<T: serde::Serialize>(value: T) -> Result<OnHostResponse, RpcError> {
    serde_json::to_value(value)
        .map(OnHostResponse)
        .map_err(|e| internal(format!("the daemon could not encode its answer: {e}")))
}

/// `on_host`: the call forwarded to one host, or asked of every host and merged.
pub(super) async fn on_host(
    params: OnHostParams,
    engine: &Engine,
    links: &Links,
    forwarding: &Forwarding,
) -> Result<OnHostResponse, RpcError> {
    let host = params.host.trim().to_owned();
    if host.is_empty() {
        return Err(error(
            "`host` is empty: name a host of hosts.toml, or `all`".to_owned(),
        ));
    }
    let all = host == ALL_HOSTS;
    match params.call {
        HostCall::ListSessions(list) if all => to_value(list_all(list, engine, links).await?),
        HostCall::ListSessions(mut list) => {
            list.caller = for_the_link(list.caller);
            let mut response = call(links, &host, list)
                .await
                .map_err(|e| error(e.message().to_owned()))?;
            mark_host(&mut response, &host);
            to_value(response)
        }
        HostCall::Send(send) if all => to_value(send_all(send, engine, links, forwarding).await?),
        HostCall::Send(send) => {
            to_value(forward_send(&host, send, engine, links, forwarding).await?)
        }
        HostCall::DecisionsQuery(query) if all => {
            to_value(decisions_all(query, engine, links).await?)
        }
        HostCall::DecisionsQuery(query) => {
            let mut response = call(links, &host, query)
                .await
                .map_err(|e| error(e.message().to_owned()))?;
            mark_decisions(&mut response, &host);
            to_value(response)
        }
        call_there if all => Err(error(format!(
            "`{}` asks one host: name it (`all` is for listings, sends by session name and \
             decisions)",
            call_there.method()
        ))),
        HostCall::Pin(mut pin) => {
            pin.caller = for_the_link(pin.caller);
            to_value(
                call(links, &host, pin)
                    .await
                    .map_err(|e| error(e.message().to_owned()))?,
            )
        }
        HostCall::BridgeStatus(mut status) => {
            status.caller = for_the_link(status.caller);
            to_value(
                call(links, &host, status)
                    .await
                    .map_err(|e| error(e.message().to_owned()))?,
            )
        }
    }
}

/// The caller as it travels over a link: who it is (its session variables, its client), not
/// its environment, its settings or its processes, which mean nothing on the other machine.
/// The remote daemon takes those from its own user's environment, as for a local client there.
fn for_the_link(caller: CallerContext) -> CallerContext {
    CallerContext {
        pid: 0,
        ancestry: Vec::new(),
        settings: BTreeMap::new(),
        child_env: BTreeMap::new(),
        withheld_env: Vec::new(),
        ..caller
    }
}

/// Every entry of `response` names `host`.
fn mark_host(response: &mut ListSessionsResponse, host: &str) {
    for entries in response.sessions.values_mut() {
        for entry in entries {
            entry.host = Some(host.to_owned());
        }
    }
    for warning in &mut response.warnings {
        *warning = format!("host `{host}`: {warning}");
    }
}

/// `list_sessions` on `host`, every entry naming it; an error says why it could not be asked
/// (the link's state, in words naming the host).
pub(crate) async fn list_on(
    links: &Links,
    host: &str,
    mut params: ListSessionsParams,
) -> Result<ListSessionsResponse, String> {
    params.caller = for_the_link(params.caller);
    let mut response = call(links, host, params)
        .await
        .map_err(|e| e.message().to_owned())?;
    mark_host(&mut response, host);
    Ok(response)
}

/// `list_sessions` here and on every host at once, merged by agent (this machine's first);
/// a host that cannot be asked is a warning naming it.
async fn list_all(
    list: ListSessionsParams,
    engine: &Engine,
    links: &Links,
) -> Result<ListSessionsResponse, RpcError> {
    let params = list.clone();
    let asking = ask_every_host(links, move |links, host| {
        let params = params.clone();
        async move { list_on(&links, &host, params).await }
    });
    let mut merged = blocking(engine, move |engine| engine.list_sessions(list)).await?;
    let answers = asking.answers().await;
    for (_, answer) in answers {
        match answer {
            Ok(response) => {
                for (agent, entries) in response.sessions {
                    merged.sessions.entry(agent).or_default().extend(entries);
                }
                merged.warnings.extend(response.warnings);
            }
            Err(why) => merged.warnings.push(why),
        }
    }
    Ok(merged)
}

/// A send with `host = "all"`: the one host (this machine included) whose sessions of that
/// agent answer to its `session_id`. None: refused naming the hosts asked; two or more:
/// refused as ambiguous, naming each.
async fn send_all(
    send: SendParams,
    engine: &Engine,
    links: &Links,
    forwarding: &Forwarding,
) -> Result<SendResponse, RpcError> {
    let Some(query) = send.session_id.clone().filter(|s| !s.trim().is_empty()) else {
        return refused_here(
            engine,
            send.agent,
            RefusalReason::InvalidArguments,
            "host `all` needs a session_id (an id or exact name) to find the one host whose \
             session it is; nothing was sent"
                .to_owned(),
            json!({"host": ALL_HOSTS}),
        )
        .await;
    };
    let resolve = |caller: CallerContext| IndexSessionsParams {
        agents: vec![send.agent],
        resolve: Some(IndexResolve {
            agent: send.agent,
            query: query.clone(),
            scope: send.scope.unwrap_or(Scope::Any),
            cwd: send.cwd.clone().unwrap_or_else(|| "/".to_owned()),
            bound: None,
        }),
        caller,
    };
    let mut found: Vec<Option<String>> = Vec::new();
    let mut unreachable = Vec::new();
    let local = resolve(send.caller.clone());
    let here = blocking(engine, move |engine| Ok(engine.index_sessions(local))).await?;
    if here.matched_by.is_some() {
        found.push(None);
    }
    for host in host_names(links) {
        match call(links, &host, resolve(for_the_link(send.caller.clone()))).await {
            Ok(answer) if answer.matched_by.is_some() => found.push(Some(host)),
            Ok(_) => {}
            Err(e) => unreachable.push(e.message().to_owned()),
        }
    }
    let named = |host: &Option<String>| match host {
        None => "this machine".to_owned(),
        Some(name) => format!("host `{name}`"),
    };
    match found.as_slice() {
        [] => refused_here(
            engine,
            send.agent,
            RefusalReason::NoSuchSession,
            format!(
                "no {} session answers to {query:?} on this machine or any host{}; nothing was \
                 sent",
                send.agent,
                if unreachable.is_empty() {
                    String::new()
                } else {
                    format!(" that could be asked ({})", unreachable.join("; "))
                }
            ),
            json!({"host": ALL_HOSTS, "session_id": query}),
        )
        .await,
        [only] => match only.clone() {
            None => blocking(engine, move |engine| engine.send(send)).await,
            Some(host) => forward_send(&host, send, engine, links, forwarding).await,
        },
        several => refused_here(
            engine,
            send.agent,
            RefusalReason::AmbiguousName,
            format!(
                "{query:?} names a {} session on {}: pass host to say which; nothing was sent",
                send.agent,
                several.iter().map(named).collect::<Vec<_>>().join(" and ")
            ),
            json!({"host": ALL_HOSTS, "session_id": query,
                   "hosts": several.iter().map(|h| h.clone().unwrap_or_else(|| "this machine".to_owned())).collect::<Vec<_>>()}),
        )
        .await,
    }
}

/// A send this daemon refuses before any engine takes it, its decision line written here as a
/// refusal by the engine would be (one by the host is that host's to write).
async fn refused_here(
    engine: &Engine,
    agent: Agent,
    reason: RefusalReason,
    message: String,
    details: serde_json::Value,
) -> Result<SendResponse, RpcError> {
    let refusal = Refusal {
        reason,
        message,
        candidates: Vec::new(),
        details,
    };
    let line = refusal.clone();
    blocking(engine, move |engine| {
        engine.record_refused_send(agent, &line);
        Ok(())
    })
    .await?;
    Ok(SendResponse::Refused(refusal))
}

/// A send to a session on `host`: recorded here, forwarded once with that id, the receipt
/// naming the host.
pub(crate) async fn forward_send(
    host: &str,
    send: SendParams,
    engine: &Engine,
    links: &Links,
    forwarding: &Forwarding,
) -> Result<SendResponse, RpcError> {
    if links.client(host).is_none() {
        return refused_here(
            engine,
            send.agent,
            RefusalReason::NotAvailable,
            format!("{}; nothing was sent", not_connected(links, host)),
            json!({"host": host}),
        )
        .await;
    }
    let (owned_host, params) = (host.to_owned(), send.clone());
    let record = blocking(engine, move |engine| {
        engine.record_remote_send(&owned_host, &params)
    })
    .await?;
    let delivery_id = record.delivery_id.clone();
    forwarding.ids.lock().insert(delivery_id.clone());
    let forwarded = SendForwardedParams {
        delivery_id: delivery_id.clone(),
        from_machine: cross_agent_process::machine_name(),
        send: SendParams {
            caller: for_the_link(send.caller),
            ..send
        },
    };
    let answer = call(links, host, forwarded).await;
    let settled = match &answer {
        Ok(SendResponse::Accepted(receipt)) => {
            let (id, receipt) = (delivery_id.clone(), receipt.clone());
            blocking(engine, move |engine| engine.remote_accepted(&id, &receipt)).await
        }
        Ok(SendResponse::Refused(refusal)) => {
            let (id, why) = (
                delivery_id.clone(),
                format!("refused by host `{host}`: {}", refusal.message),
            );
            blocking(engine, move |engine| engine.remote_failed(&id, &why, false)).await
        }
        Err(CallError::Remote(why)) => {
            let (id, why) = (delivery_id.clone(), why.clone());
            blocking(engine, move |engine| engine.remote_failed(&id, &why, false)).await
        }
        // The remote may have it: the follower asks once the link is up.
        Err(CallError::Link(_)) => Ok(()),
    };
    forwarding.ids.lock().remove(&delivery_id);
    if let Err(e) = settled {
        tracing::warn!(delivery_id = %delivery_id, error = %e.message, "could not record a forwarded send's answer");
    }
    match answer {
        Ok(SendResponse::Accepted(mut receipt)) => {
            receipt.host = Some(host.to_owned());
            Ok(SendResponse::Accepted(receipt))
        }
        Ok(SendResponse::Refused(mut refusal)) => {
            refusal.message = format!("host `{host}`: {}", refusal.message);
            Ok(SendResponse::Refused(refusal))
        }
        Err(CallError::Remote(why)) => Err(internal(format!("{why}; nothing was sent"))),
        Err(CallError::Link(why)) => Err(internal(format!(
            "{why}; delivery {delivery_id} is recorded here and is never re-sent: its outcome \
             is taken from host `{host}`'s record when the link is back (`cross-agent status \
             {delivery_id}`)"
        ))),
    }
}

/// `send_forwarded`: another machine's send, taken like a local one under its own id. The
/// caller's environment and settings are this daemon's own user's, as for a local client.
pub(super) fn send_forwarded(
    engine: &Engine,
    params: SendForwardedParams,
) -> cross_agent_hub::Result<SendResponse> {
    let SendForwardedParams {
        delivery_id,
        from_machine,
        mut send,
    } = params;
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    send.caller.settings = cross_agent_caller::env::settings(&vars);
    let env = cross_agent_caller::env::child_env(&vars);
    send.caller.child_env = env.vars;
    send.caller.withheld_env = env.withheld;
    engine.send_forwarded(&delivery_id, from_machine.as_deref(), send)
}

/// `decisions_query`: this daemon's decisions log, counted or listed; lines skipped and files
/// that could not be read are its warnings.
pub(super) fn decisions_query(
    home: &std::path::Path,
    params: &DecisionsQueryParams,
) -> Result<DecisionsQueryResponse, String> {
    use cross_agent_decisions::query::{self, Answer, Condition, FieldPath, Query};
    let now = cross_agent_decisions::clock::now_millis();
    let parse_time = |t: &Option<String>| {
        t.as_deref()
            .map(|t| query::parse_time(t, now))
            .transpose()
            .map_err(|e| e.to_string())
    };
    let query = Query {
        since: parse_time(&params.since)?,
        until: parse_time(&params.until)?,
        kinds: params.kinds.clone(),
        conditions: params
            .conditions
            .iter()
            .map(|c| Condition::parse(c))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?,
        group_by: params
            .by
            .iter()
            .map(|f| FieldPath::parse(f))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?,
    };
    let report = query::run(home, &query).map_err(|e| e.to_string())?;
    let mut response = DecisionsQueryResponse {
        hosts: vec![None],
        ..DecisionsQueryResponse::default()
    };
    match report.answer {
        Answer::Records(records) => {
            response.records = records
                .into_iter()
                .map(|line| DecisionRecord { host: None, line })
                .collect();
        }
        Answer::Groups(groups) => {
            response.groups = groups
                .into_iter()
                .map(|g| DecisionGroup {
                    host: None,
                    key: g.values,
                    count: g.count,
                })
                .collect();
        }
    }
    let stats = &report.stats;
    if stats.bad_lines > 0 {
        response.warnings.push(format!(
            "skipped {} unreadable line(s) (torn by a crash or not a decision record)",
            stats.bad_lines
        ));
    }
    for (path, why) in &stats.unreadable {
        response
            .warnings
            .push(format!("could not read {}: {why}", path.display()));
    }
    Ok(response)
}

/// Every group, record and warning of one host's answer names that host.
fn mark_decisions(response: &mut DecisionsQueryResponse, host: &str) {
    for group in &mut response.groups {
        group.host = Some(host.to_owned());
    }
    for record in &mut response.records {
        record.host = Some(host.to_owned());
    }
    for warning in &mut response.warnings {
        *warning = format!("host `{host}`: {warning}");
    }
    response.hosts = vec![Some(host.to_owned())];
}

/// The `at` of a record as written (RFC 3339 UTC, milliseconds, so its text sorts by time).
fn record_at(line: &str) -> String {
    #[derive(serde::Deserialize)]
    struct At {
        #[serde(default)]
        at: String,
    }
    serde_json::from_str::<At>(line)
        .map(|a| a.at)
        .unwrap_or_default()
}

/// `decisions --hosts all`: this machine's log and each host's, asked at once where each lies;
/// the counts stay per host (largest first) and the records are interleaved by time, each
/// naming its host. A host that cannot be asked is in `unreachable`.
async fn decisions_all(
    params: DecisionsQueryParams,
    engine: &Engine,
    links: &Links,
) -> Result<DecisionsQueryResponse, RpcError> {
    let asked = params.clone();
    let asking = ask_every_host(links, move |links, host| {
        let params = asked.clone();
        async move {
            call(&links, &host, params)
                .await
                .map_err(|e| e.message().to_owned())
        }
    });
    let home = engine.info().state_root.clone();
    let mut merged =
        match tokio::task::spawn_blocking(move || decisions_query(&home, &params)).await {
            Ok(Ok(answer)) => answer,
            // This machine's own query failing (a bad --where, say) fails the whole request, as it
            // would have failed on every host alike.
            Ok(Err(why)) => return Err(error(why)),
            Err(e) => return Err(internal(format!("the daemon failed while answering: {e}"))),
        };
    let answers = asking.answers().await;
    for (host, answer) in answers {
        match answer {
            Ok(mut answer) => {
                mark_decisions(&mut answer, &host);
                merged.groups.extend(answer.groups);
                merged.records.extend(answer.records);
                merged.warnings.extend(answer.warnings);
                merged.hosts.push(Some(host));
            }
            Err(reason) => merged.unreachable.push(UnreachableHost { host, reason }),
        }
    }
    merged.groups.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.host.cmp(&b.host))
            .then_with(|| a.key.cmp(&b.key))
    });
    // Stable: each log's own order is kept among records of the same millisecond.
    merged.records.sort_by_cached_key(|r| record_at(&r.line));
    Ok(merged)
}

/// Keeps the records of forwarded sends in step with the remote records until `stop`.
pub(super) fn follow(
    engine: Engine,
    links: Links,
    forwarding: Arc<Forwarding>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(FOLLOW_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let stopping = tokio::select! {
                _ = tick.tick() => false,
                _ = stop.wait_for(|stop| *stop) => true,
            };
            if stopping {
                break;
            }
            follow_once(&engine, &links, &forwarding).await;
        }
    });
}

/// One look at every forwarded delivery not finished yet whose link is up.
async fn follow_once(engine: &Engine, links: &Links, forwarding: &Forwarding) {
    let unfinished = match blocking(engine, |engine| engine.remote_unfinished()).await {
        Ok(records) => records,
        Err(e) => {
            tracing::warn!(error = %e.message, "cannot list the forwarded deliveries");
            return;
        }
    };
    for record in unfinished {
        let Some(host) = record.host.clone() else {
            continue;
        };
        if forwarding.ids.lock().contains(&record.delivery_id) || links.client(&host).is_none() {
            continue;
        }
        let asked = BridgeStatusParams {
            cwd: None,
            scope: None,
            delivery_id: Some(record.delivery_id.clone()),
            caller: CallerContext::default(),
        };
        let id = record.delivery_id.clone();
        let outcome = match call(links, &host, asked).await {
            Ok(status) => match status.delivery {
                Some(remote) => {
                    blocking(engine, move |engine| {
                        engine.settle_remote(&remote).map(|_| ())
                    })
                    .await
                }
                None => {
                    let why = format!(
                        "outcome unknown: host `{host}` has no record of delivery {id} (the link \
                         dropped before the send reached it); it is never re-sent"
                    );
                    tracing::warn!(delivery_id = %id, host = %host, "forwarded delivery unknown there");
                    blocking(engine, move |engine| engine.remote_failed(&id, &why, true)).await
                }
            },
            // Asked again at the next look.
            Err(_) => Ok(()),
        };
        if let Err(e) = outcome {
            tracing::warn!(delivery_id = %record.delivery_id, error = %e.message, "could not settle a forwarded delivery");
        }
    }
    follow_late_answers(engine, links).await;
}

/// One look for late answers: each forwarded delivery that ended with an answer taken by
/// timing alone, while the watch on it there runs, asks its remote record whether the watch
/// found the real answer; one found is recorded here and goes to the sender like a local late
/// answer ([`Engine::remote_late_answer`]).
async fn follow_late_answers(engine: &Engine, links: &Links) {
    let awaiting = match blocking(engine, |engine| engine.remote_awaiting_late_answers()).await {
        Ok(records) => records,
        Err(e) => {
            tracing::warn!(error = %e.message, "cannot list the forwarded deliveries awaiting a late answer");
            return;
        }
    };
    for record in awaiting {
        let Some(host) = record.host.clone() else {
            continue;
        };
        if links.client(&host).is_none() {
            continue;
        }
        let asked = |delivery_id: &str| BridgeStatusParams {
            cwd: None,
            scope: None,
            delivery_id: Some(delivery_id.to_owned()),
            caller: CallerContext::default(),
        };
        let Ok(status) = call(links, &host, asked(&record.delivery_id)).await else {
            continue;
        };
        let Some(late_id) = status
            .delivery
            .as_ref()
            .and_then(|remote| remote.late_reply_delivery_id.clone())
        else {
            continue;
        };
        // The whole answer, read there from the transcript: the turn that carries the
        // request's id. Else what the late answer's record keeps (its first characters).
        let text = match status.peer_transcript {
            Some(peer) if peer.answer_carries_request_id && peer.answer.is_some() => peer.answer,
            _ => match call(links, &host, asked(&late_id)).await {
                Ok(late) => late.delivery.and_then(|late| late.reply_preview),
                Err(_) => continue,
            },
        };
        let Some(text) = text else {
            continue;
        };
        let id = record.delivery_id.clone();
        if let Err(e) = blocking(engine, move |engine| engine.remote_late_answer(&id, &text)).await
        {
            tracing::warn!(delivery_id = %record.delivery_id, error = %e.message, "could not record a forwarded delivery's late answer");
        }
    }
}
