//! One client connection: the `hello` handshake, then each request answered in order — the
//! daemon's own methods here, the messaging methods by the engine on a blocking thread — until
//! the client goes, the daemon stops, or a handover sends the client to the successor.
//!
//! A connection that sends nothing for the idle timeout ([`super::admission`]) is closed. Only
//! the wait *between* requests counts: a request being answered (a hook waiting minutes for a
//! tap on the phone, say) is never cut, and neither is the connection of a restart between
//! its handover's `release` and `drain` (it waits on purpose while the successor starts, and
//! losing it would abort the handover).

use std::sync::Arc;

use cross_agent_home::pidfile::PidLock;
use cross_agent_hub::Engine;
use cross_agent_ipc::draining::{self, DrainLock};

use cross_agent_ipc::frame::{self, FrameReader, ReadError};
use cross_agent_ipc::transport::Stream;
use cross_agent_protocol::bridge::{
    BridgeStatusParams, IndexListingParams, IndexSessionsParams, ListSessionsParams, PinParams,
    SendParams,
};
use cross_agent_protocol::events::EngineEvent;
use cross_agent_protocol::review::ReviewCorrectionParams;
use cross_agent_protocol::rpc::{
    ClientRequest, ErrorCode, ForwardEventParams, ForwardEventResponse, ForwardedEvent,
    HandoverParams, HandoverResponse, HandoverStep, HelloParams, HelloResponse, METHODS, Method,
    PROTOCOL_VERSION, ProtocolMismatchData, Request, RequestId, RpcError, ServerMessage,
    ShutdownResponse, StatusResponse,
};
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::live::ListingBytes;
use cross_agent_stores::render::Piece;
use tokio::io::BufReader;
use tokio::sync::OwnedSemaphorePermit;

use super::{Phase, Shared, carried};

/// What to do after answering.
enum After {
    Continue,
    /// Write these bytes right after the answer's frame, then go on (`index_listing`: the
    /// rendered listing, which has newlines and so cannot travel inside a frame).
    Trailer(ListingBytes),
    /// Close the connection (after a protocol mismatch).
    Close,
    /// Stop the daemon (after answering `shutdown`).
    Stop,
}

/// Per-connection state.
#[derive(Default)]
struct Session {
    hello: Option<HelloParams>,
    /// This connection's `handover {release}` let go of the home: if it goes away before
    /// `drain` or `abort`, the handover is aborted (the restart that drove it died).
    released: bool,
}

/// Serves one connection; `_permit` is its place under the connection cap, given back when
/// it ends.
pub(super) async fn serve(stream: Stream, shared: Arc<Shared>, _permit: OwnedSemaphorePermit) {
    let (read, mut write) = stream.into_split();
    let mut frames = FrameReader::new(BufReader::new(read));
    let mut stop = shared.stop.subscribe();
    let mut session = Session::default();
    loop {
        // Between requests only; a handover's restart waits on purpose (see the header).
        let idle_timeout = shared.idle_timeout.filter(|_| !session.released);
        let idle = async {
            match idle_timeout {
                Some(timeout) => tokio::time::sleep(timeout).await,
                None => std::future::pending().await,
            }
        };
        let frame = tokio::select! {
            biased;
            () = async { let _ = stop.wait_for(|stop| *stop).await; } => break,
            frame = frames.next_frame() => frame,
            () = idle => {
                tracing::debug!(
                    client_pid = session.hello.as_ref().map(|hello| hello.client_pid),
                    idle_s = idle_timeout.map(|t| t.as_secs()),
                    "closed a connection idle past the timeout"
                );
                break;
            }
        };
        let (reply, after) = match frame {
            Ok(Some(bytes)) => handle_frame(&bytes, &shared, &mut session).await,
            Ok(None) => break,
            Err(ReadError::TooLarge { limit }) => (
                error(
                    None,
                    ErrorCode::FrameTooLarge,
                    format!("the request was longer than {limit} bytes and was skipped"),
                ),
                After::Continue,
            ),
            Err(ReadError::Io(error)) => {
                tracing::debug!(%error, "connection read failed");
                break;
            }
        };
        if let Err(error) = frame::write_frame(&mut write, &reply).await {
            tracing::debug!(%error, "connection write failed");
            break;
        }
        match after {
            After::Continue => {}
            After::Trailer(bytes) => {
                use tokio::io::AsyncWriteExt as _;
                // In chunks of one bounded buffer: the kept runs read back from the files the
                // renderings are kept in as they are reached (or, kept on the heap, written
                // from where they are), so a listing is a few hundred writes and never held
                // whole. A text that cannot be read back ends the connection: the client,
                // told the listing's length in the frame, reports it short.
                let mut chunks = bytes.chunks();
                let mut written = Ok(());
                while let Some(piece) = chunks.next_piece() {
                    written = match piece {
                        Ok(Piece::Bytes(chunk)) => write.write_all(chunk).await,
                        // A long run of a kept text: sent from its file by the kernel, not
                        // read into a buffer first.
                        Ok(Piece::File { file, at, len }) => {
                            let sent = send_file(&mut write, file, at, len).await;
                            if let Err(error) = &sent
                                && error.kind() == std::io::ErrorKind::UnexpectedEof
                            {
                                tracing::warn!(%error, "the listing could not be written whole");
                            }
                            sent
                        }
                        Err(error) => {
                            tracing::warn!(%error, "the listing could not be written whole");
                            Err(error)
                        }
                    };
                    if written.is_err() {
                        break;
                    }
                }
                let written = match written {
                    Ok(()) => write.flush().await,
                    Err(error) => Err(error),
                };
                if let Err(error) = written {
                    tracing::debug!(%error, "connection write failed");
                    break;
                }
            }
            After::Close => break,
            After::Stop => {
                shared.stop.send_replace(true);
                break;
            }
        }
    }
    if session.released && *shared.phase.borrow() == Phase::Released {
        tracing::warn!("the restart that asked for a handover went away before finishing it");
        let aborted = handover(
            RequestId(0),
            HandoverParams {
                step: HandoverStep::Abort {
                    reason: "the restart that asked for it went away".to_owned(),
                },
            },
            &shared,
        );
        if let ServerMessage::Error { .. } = aborted {
            // The successor took the home before the restart went away: it serves, so this
            // daemon drains rather than stay beside it without a lock.
            let successor_pid = match cross_agent_home::pidfile::probe(&shared.home.pidfile()) {
                Ok(cross_agent_home::pidfile::Holder::Held(Some(pid))) => pid,
                Ok(_) | Err(_) => 0,
            };
            let _ = handover(
                RequestId(0),
                HandoverParams {
                    step: HandoverStep::Drain {
                        successor_pid,
                        // For messages only: the successor is the next start.
                        successor_generation: shared.info.generation + 1,
                    },
                },
                &shared,
            );
        }
    }
    if let Some(hello) = session.hello {
        tracing::debug!(client_kind = ?hello.client_kind, client_pid = hello.client_pid, "client disconnected");
    }
}

fn error(id: Option<RequestId>, code: ErrorCode, message: String) -> ServerMessage {
    ServerMessage::Error {
        id,
        error: RpcError::new(code, message),
    }
}

fn respond<M: Method>(id: RequestId, response: M::Response) -> ServerMessage {
    match serde_json::to_value(response) {
        Ok(result) => ServerMessage::Response { id, result },
        Err(e) => error(
            Some(id),
            ErrorCode::Internal,
            format!(
                "the daemon could not encode its answer to `{}`: {e}",
                M::NAME
            ),
        ),
    }
}

/// Reads one frame in two steps — first as any JSON, then as a request — so a broken request
/// is answered with the most precise error and, whenever it can be read, its own id.
async fn handle_frame(
    bytes: &[u8],
    shared: &Shared,
    session: &mut Session,
) -> (ServerMessage, After) {
    let value: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(e) => {
            return (
                error(
                    None,
                    ErrorCode::ParseError,
                    format!("the request is not JSON ({e}); send one JSON object per line"),
                ),
                After::Continue,
            );
        }
    };
    let id = value
        .get("id")
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    let Some(id) = id else {
        return (
            error(
                None,
                ErrorCode::InvalidRequest,
                "the request has no numeric `id`".to_owned(),
            ),
            After::Continue,
        );
    };
    let Some(method) = value.get("method").and_then(|m| m.as_str()) else {
        return (
            error(
                Some(id),
                ErrorCode::InvalidRequest,
                "the request has no `method`".to_owned(),
            ),
            After::Continue,
        );
    };
    if !METHODS.contains(&method) {
        return (
            error(
                Some(id),
                ErrorCode::MethodNotFound,
                format!(
                    "this daemon (pid {}, cross-agent {}) has no method `{method}`; if the client \
                     is newer, restart the daemon with `cross-agent daemon restart`",
                    shared.info.pid, shared.info.version
                ),
            ),
            After::Continue,
        );
    }
    let method = method.to_owned();
    let request: Request = match serde_json::from_value(value) {
        Ok(request) => request,
        Err(e) => {
            return (
                error(
                    Some(id),
                    ErrorCode::InvalidParams,
                    format!("the params of `{method}` do not fit: {e}"),
                ),
                After::Continue,
            );
        }
    };
    dispatch(request, shared, session).await
}

/// Runs one engine call off the async threads: it reads the agents' stores and `hub.db`.
async fn engine_call<M: Method>(
    id: RequestId,
    shared: &Shared,
    call: impl FnOnce(Engine) -> cross_agent_hub::Result<M::Response> + Send + 'static,
) -> ServerMessage {
    let engine = shared.engine.clone();
    match tokio::task::spawn_blocking(move || crate::memory::run_then_hand_back(|| call(engine)))
        .await
    {
        Ok(Ok(response)) => respond::<M>(id, response),
        Ok(Err(e)) => {
            tracing::error!(method = M::NAME, error = %e, "engine call failed");
            error(Some(id), ErrorCode::Internal, e.to_string())
        }
        Err(e) => error(
            Some(id),
            ErrorCode::Internal,
            format!("the daemon failed while answering `{}`: {e}", M::NAME),
        ),
    }
}

async fn dispatch(
    request: Request,
    shared: &Shared,
    session: &mut Session,
) -> (ServerMessage, After) {
    let id = request.id;
    let info = &shared.info;
    if session.hello.is_none() && !matches!(request.call, ClientRequest::Hello(_)) {
        return (
            error(
                Some(id),
                ErrorCode::HandshakeRequired,
                format!(
                    "say `hello` (protocol version {PROTOCOL_VERSION}) before `{}`",
                    request.call.method()
                ),
            ),
            After::Continue,
        );
    }
    if let Phase::Draining {
        successor_pid,
        successor_generation,
    } = *shared.phase.borrow()
    {
        // Nothing on this connection reaches the replaced daemon any more: the refusal says
        // the request was not taken, so the client may send it again to the successor.
        return (
            error(
                Some(id),
                ErrorCode::ShuttingDown,
                format!(
                    "this daemon (pid {}, generation {}) was replaced by pid {successor_pid} \
                     (generation {successor_generation}) and only finishes what it carries; \
                     connect again",
                    info.pid, info.generation
                ),
            ),
            After::Continue,
        );
    }
    match request.call {
        ClientRequest::Hello(params) => {
            if params.protocol_version != PROTOCOL_VERSION {
                tracing::warn!(
                    client_kind = ?params.client_kind,
                    client_pid = params.client_pid,
                    client_version = %params.client_version,
                    client_protocol = params.protocol_version,
                    "refused a client of another protocol version"
                );
                let message = format!(
                    "this daemon (pid {}, cross-agent {}) speaks protocol {PROTOCOL_VERSION}, but \
                     the client (pid {}, cross-agent {}) speaks protocol {}; restart the daemon \
                     from the same build as the client (`cross-agent daemon restart`)",
                    info.pid,
                    info.version,
                    params.client_pid,
                    params.client_version,
                    params.protocol_version
                );
                let data = ProtocolMismatchData {
                    daemon_protocol_version: PROTOCOL_VERSION,
                    client_protocol_version: params.protocol_version,
                    daemon_pid: info.pid,
                    daemon_version: info.version.clone(),
                };
                let mut rpc_error = RpcError::new(ErrorCode::ProtocolMismatch, message);
                rpc_error.data = serde_json::to_value(data).ok();
                return (
                    ServerMessage::Error {
                        id: Some(id),
                        error: rpc_error,
                    },
                    After::Close,
                );
            }
            tracing::debug!(
                client_kind = ?params.client_kind,
                client_pid = params.client_pid,
                client_version = %params.client_version,
                "client connected"
            );
            session.hello = Some(params);
            (
                respond::<HelloParams>(
                    id,
                    HelloResponse {
                        protocol_version: PROTOCOL_VERSION,
                        daemon_pid: info.pid,
                        daemon_version: info.version.clone(),
                        generation: info.generation,
                        started_at: info.started_at.clone(),
                        tools_version: Some(info.tools_version.clone()),
                    },
                ),
                After::Continue,
            )
        }
        ClientRequest::Status(_) => (
            respond::<cross_agent_protocol::rpc::StatusParams>(
                id,
                StatusResponse {
                    daemon_pid: info.pid,
                    daemon_version: info.version.clone(),
                    protocol_version: PROTOCOL_VERSION,
                    generation: info.generation,
                    started_at: info.started_at.clone(),
                    uptime_seconds: info.started.elapsed().as_secs(),
                    home: info.home.to_string_lossy().into_owned(),
                    socket: info.socket.to_string_lossy().into_owned(),
                    draining: others_draining(shared),
                },
            ),
            After::Continue,
        ),
        ClientRequest::Shutdown(params) => {
            let client = session.hello.as_ref().map(|h| h.client_pid);
            tracing::info!(
                reason = params.reason.as_deref().unwrap_or("none given"),
                client_pid = client,
                "shutdown requested"
            );
            (
                respond::<cross_agent_protocol::rpc::ShutdownParams>(
                    id,
                    ShutdownResponse {
                        daemon_pid: info.pid,
                        generation: info.generation,
                    },
                ),
                After::Stop,
            )
        }
        ClientRequest::Send(params) => (
            engine_call::<SendParams>(id, shared, move |engine| engine.send(params)).await,
            After::Continue,
        ),
        ClientRequest::ListSessions(params) => (
            engine_call::<ListSessionsParams>(id, shared, move |engine| {
                engine.list_sessions(params)
            })
            .await,
            After::Continue,
        ),
        ClientRequest::IndexSessions(params) => (
            engine_call::<IndexSessionsParams>(id, shared, move |engine| {
                Ok(engine.index_sessions(params))
            })
            .await,
            After::Continue,
        ),
        ClientRequest::UsageReport(params) => (
            engine_call::<cross_agent_protocol::usage::UsageReportParams>(
                id,
                shared,
                move |engine| engine.usage_report(params),
            )
            .await,
            After::Continue,
        ),
        ClientRequest::IndexListing(params) => {
            let engine = shared.engine.clone();
            let rendered = tokio::task::spawn_blocking(move || {
                crate::memory::run_then_hand_back(|| engine.index_listing(&params))
            })
            .await;
            match rendered {
                Ok((response, out)) => (
                    respond::<IndexListingParams>(id, response),
                    After::Trailer(out),
                ),
                Err(e) => (
                    error(
                        Some(id),
                        ErrorCode::Internal,
                        format!("the daemon failed while answering `index_listing`: {e}"),
                    ),
                    After::Continue,
                ),
            }
        }
        ClientRequest::Pin(params) => (
            engine_call::<PinParams>(id, shared, move |engine| engine.pin(params)).await,
            After::Continue,
        ),
        ClientRequest::BridgeStatus(params) => {
            let draining = others_draining(shared);
            (
                engine_call::<BridgeStatusParams>(id, shared, move |engine| {
                    let mut response = engine.bridge_status(params)?;
                    // The engine names this process; the daemon knows the replaced ones still
                    // finishing their deliveries.
                    response.server_process.draining = draining;
                    Ok(response)
                })
                .await,
                After::Continue,
            )
        }
        ClientRequest::Hook(params) => {
            // A relay's hooks (Claude's native peer door) are answered by the relay host; every
            // other hook call goes to the Telegram bot as before.
            let relayed = match shared.engine.relay_host() {
                Some(host) => host.hook(&params).await,
                None => None,
            };
            let answer = match relayed {
                Some(answer) => answer,
                None => shared.bot.hook(params).await,
            };
            (
                respond::<cross_agent_protocol::hook::HookParams>(id, answer),
                After::Continue,
            )
        }
        ClientRequest::ReviewCorrection(params) => {
            let (engine, bot) = (shared.engine.clone(), shared.bot.clone());
            let home = shared.home.root().to_owned();
            let answered = tokio::task::spawn_blocking(move || {
                crate::review_correction::correct(&engine, &bot, &home, &params)
            })
            .await;
            let message = match answered {
                Ok(Ok(response)) => respond::<ReviewCorrectionParams>(id, response),
                Ok(Err(why)) => {
                    tracing::warn!(error = %why, "review_correction could not be judged");
                    error(Some(id), ErrorCode::Internal, why)
                }
                Err(e) => error(
                    Some(id),
                    ErrorCode::Internal,
                    format!("the daemon failed while answering `review_correction`: {e}"),
                ),
            };
            (message, After::Continue)
        }
        ClientRequest::ForwardEvent(params) => {
            let ForwardEventParams {
                from_generation,
                event,
            } = params;
            let event = match event {
                ForwardedEvent::DeliveryFailed { record } => EngineEvent::DeliveryFailed(record),
            };
            let delivery_id = event.delivery_id().to_owned();
            let subscribers = shared.engine.publish_forwarded(event);
            tracing::info!(
                from_generation,
                delivery_id = %delivery_id,
                subscribers,
                "published an event forwarded by a replaced daemon"
            );
            (
                respond::<ForwardEventParams>(
                    id,
                    ForwardEventResponse {
                        subscribers: u64::try_from(subscribers).unwrap_or(u64::MAX),
                    },
                ),
                After::Continue,
            )
        }
        ClientRequest::OnHost(params) => {
            let answer =
                super::remote::on_host(params, &shared.engine, &shared.links, &shared.forwarding)
                    .await;
            let message = match answer {
                Ok(response) => respond::<cross_agent_protocol::hosts::OnHostParams>(id, response),
                Err(rpc_error) => ServerMessage::Error {
                    id: Some(id),
                    error: rpc_error,
                },
            };
            (message, After::Continue)
        }
        ClientRequest::ApprovalsPending(_) => (
            respond::<cross_agent_protocol::hosts::ApprovalsPendingParams>(
                id,
                cross_agent_protocol::hosts::ApprovalsPendingResponse {
                    approvals: shared.bot.approvals_for_link(),
                },
            ),
            After::Continue,
        ),
        ClientRequest::ApprovalAnswer(params) => (
            respond::<cross_agent_protocol::hosts::ApprovalAnswerParams>(
                id,
                shared.bot.answer_from_link(&params).await,
            ),
            After::Continue,
        ),
        ClientRequest::SendForwarded(params) => (
            engine_call::<cross_agent_protocol::hosts::SendForwardedParams>(
                id,
                shared,
                move |engine| super::remote::send_forwarded(&engine, params),
            )
            .await,
            After::Continue,
        ),
        ClientRequest::DecisionsQuery(params) => {
            let home = shared.home.root().to_owned();
            let answer =
                tokio::task::spawn_blocking(move || super::remote::decisions_query(&home, &params))
                    .await;
            let message = match answer {
                Ok(Ok(response)) => {
                    respond::<cross_agent_protocol::hosts::DecisionsQueryParams>(id, response)
                }
                Ok(Err(why)) => error(Some(id), ErrorCode::InvalidParams, why),
                Err(e) => error(
                    Some(id),
                    ErrorCode::Internal,
                    format!("the daemon failed while answering `decisions_query`: {e}"),
                ),
            };
            (message, After::Continue)
        }
        ClientRequest::HostsStatus(_) => (
            respond::<cross_agent_protocol::hosts::HostsStatusParams>(id, shared.links.status()),
            After::Continue,
        ),
        ClientRequest::Handover(params) => {
            let releasing = matches!(params.step, HandoverStep::Release);
            let reply = handover(id, params, shared);
            if releasing && matches!(reply, ServerMessage::Response { .. }) {
                session.released = true;
            }
            (reply, After::Continue)
        }
    }
}

/// The replaced daemons of this home still draining, other than this one.
fn others_draining(shared: &Shared) -> Vec<cross_agent_protocol::rpc::DrainingDaemon> {
    draining::list(&shared.home)
        .into_iter()
        .filter(|d| d.generation != shared.info.generation)
        .collect()
}

/// One step of a handover (see [`crate::handover`]).
fn handover(id: RequestId, params: HandoverParams, shared: &Shared) -> ServerMessage {
    let info = &shared.info;
    let phase = *shared.phase.borrow();
    let outcome: std::result::Result<(), String> = match (params.step, phase) {
        (HandoverStep::Release, Phase::Serving) => {
            shared.engine.pause_dispatch(true);
            match DrainLock::acquire(&shared.home, info.generation, &now_rfc3339()) {
                Ok(record) => {
                    *shared.drain_lock.lock() = Some(record);
                    shared.lock.lock().take();
                    shared.phase.send_replace(Phase::Released);
                    tracing::info!("handover: let go of the pidfile lock for a successor");
                    Ok(())
                }
                Err(e) => {
                    shared.engine.pause_dispatch(false);
                    Err(format!("could not record this daemon as draining: {e}"))
                }
            }
        }
        (HandoverStep::Abort { reason }, Phase::Released) => {
            match PidLock::acquire(&shared.home.pidfile()) {
                Ok(lock) => {
                    *shared.lock.lock() = Some(lock);
                    shared.drain_lock.lock().take();
                    shared.engine.pause_dispatch(false);
                    shared.phase.send_replace(Phase::Serving);
                    tracing::warn!(%reason, "handover aborted; serving on");
                    Ok(())
                }
                Err(e) => Err(format!(
                    "the handover was aborted ({reason}) but the pidfile lock could not be \
                     taken back: {e}"
                )),
            }
        }
        (
            HandoverStep::Drain {
                successor_pid,
                successor_generation,
            },
            Phase::Released,
        ) => {
            tracing::info!(
                successor_pid,
                successor_generation,
                "handover: replaced; draining"
            );
            shared.phase.send_replace(Phase::Draining {
                successor_pid,
                successor_generation,
            });
            Ok(())
        }
        (step, phase) => Err(format!(
            "handover step {step:?} does not fit this daemon's state ({phase:?})"
        )),
    };
    match outcome {
        Ok(()) => respond::<HandoverParams>(
            id,
            HandoverResponse {
                daemon_pid: info.pid,
                generation: info.generation,
                carried: carried(shared),
            },
        ),
        Err(message) => error(Some(id), ErrorCode::InvalidParams, message),
    }
}

/// Sends `len` bytes of `file` from byte `at` to the connection with `sendfile` (the page
/// cache's pages handed to the socket, no copy through our memory), waiting while the socket
/// is full. A kernel that cannot send from this file to this socket: read and written instead.
async fn send_file(
    write: &mut tokio::net::unix::OwnedWriteHalf,
    file: &std::fs::File,
    mut at: u64,
    mut len: usize,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt as _;
    use tokio::io::AsyncWriteExt as _;
    while len > 0 {
        write.writable().await?;
        let stream: &tokio::net::UnixStream = write.as_ref();
        let sent = stream.try_io(tokio::io::Interest::WRITABLE, || {
            rustix::fs::sendfile(stream, file, Some(&mut at), len).map_err(std::io::Error::from)
        });
        match sent {
            // The socket took bytes before and is writable: nothing sent is the file ending
            // before the listing's length (cut short under the daemon).
            Ok(0) => return Err(kept_text_short(len)),
            Ok(n) => len -= n,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) if error.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                // Bounded: the rest in pieces of a chunk.
                let mut buf = vec![0; len.min(cross_agent_stores::render::CHUNK)];
                while len > 0 {
                    let piece = &mut buf[..len.min(cross_agent_stores::render::CHUNK)];
                    file.read_exact_at(piece, at)
                        .map_err(|error| match error.kind() {
                            std::io::ErrorKind::UnexpectedEof => kept_text_short(len),
                            _ => error,
                        })?;
                    write.write_all(piece).await?;
                    at += piece.len() as u64;
                    len -= piece.len();
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// A kept listing text whose file ended `missing` bytes before its length.
fn kept_text_short(missing: usize) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::UnexpectedEof,
        format!(
            "the listing's kept text ended {missing} bytes before its length: its unnamed file \
             in the session cache's folder was cut short under the daemon"
        ),
    )
}

#[cfg(test)]
mod tests {
    /// A kept file shorter than the range asked for: the bytes it has are sent, then an error
    /// that says the kept text was cut short — never a quiet short write.
    #[tokio::test]
    async fn a_kept_file_cut_short_is_an_error_saying_so() {
        use tokio::io::AsyncReadExt as _;
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &[7u8; 100]).unwrap();
        let (ours, mut theirs) = tokio::net::UnixStream::pair().unwrap();
        let (_read, mut write) = ours.into_split();
        let error = super::send_file(&mut write, &file, 40, 200)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::UnexpectedEof, "{error}");
        assert!(error.to_string().contains("cut short"), "{error}");
        drop(write);
        let mut got = Vec::new();
        theirs.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, vec![7u8; 60]);
    }
}
