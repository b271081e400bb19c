//! The shim's socket, `panels/<agent>-<pid>.sock`: one [`ShimRequest`] line per connection,
//! answered with [`ShimEvent`] lines until the shim closes it. The peer must run as this user
//! (`SO_PEERCRED`), checked before a byte of the request is read.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use cross_agent_protocol::panel::{ShimEvent, ShimRequest};

use super::Shared;
use super::core::{Routed, lock};

/// The longest request line taken: an 8 MiB message, escaped, in its envelope.
const MAX_REQUEST: u64 = 64 * 1024 * 1024;
/// How long a connection may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a waiting connection is checked for its peer having gone.
const PEER_CHECK: Duration = Duration::from_millis(500);

pub(super) fn serve(shared: &std::sync::Arc<Shared>, listener: UnixListener) {
    for stream in listener.incoming() {
        if shared.done.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let s = shared.clone();
        s.open_connections.fetch_add(1, Ordering::SeqCst);
        let spawned = super::spawn_named("connection", {
            let s = s.clone();
            move || {
                connection(&s, stream);
                s.open_connections.fetch_sub(1, Ordering::SeqCst);
            }
        });
        if spawned.is_err() {
            s.open_connections.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn send(stream: &mut UnixStream, event: &ShimEvent) -> bool {
    let Ok(mut line) = serde_json::to_vec(event) else {
        return false;
    };
    line.push(b'\n');
    stream.write_all(&line).is_ok()
}

fn connection(shared: &Shared, mut stream: UnixStream) {
    let me = rustix::process::geteuid().as_raw();
    match rustix::net::sockopt::socket_peercred(&stream) {
        Ok(peer) if peer.uid.as_raw() == me => {}
        Ok(peer) => {
            shared.log.line(format_args!(
                "refused a connection from uid {} (not {me})",
                peer.uid.as_raw()
            ));
            return;
        }
        Err(e) => {
            shared.log.line(format_args!(
                "refused a connection: cannot read its peer: {e}"
            ));
            return;
        }
    }
    let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
    let mut line = Vec::new();
    let read = match stream.try_clone() {
        Ok(reader) => BufReader::new(reader.take(MAX_REQUEST)).read_until(b'\n', &mut line),
        Err(e) => Err(e),
    };
    let request = match read {
        Ok(_) => serde_json::from_slice::<ShimRequest>(&line)
            .map_err(|e| format!("cannot read the request: {e}")),
        Err(e) => Err(format!("cannot read the request: {e}")),
    };
    let request = match request {
        Ok(request) => request,
        Err(reason) => {
            send(
                &mut stream,
                &ShimEvent::Failed {
                    reason,
                    delivered: false,
                },
            );
            return;
        }
    };
    let (events, reports) = mpsc::channel();
    let id = {
        let mut core = lock(&shared.core);
        if let ShimRequest::Status = request {
            let registration = core.registration();
            drop(core);
            send(&mut stream, &ShimEvent::Status { registration });
            return;
        }
        if !core.intercepting() {
            drop(core);
            send(
                &mut stream,
                &ShimEvent::Failed {
                    reason: "this panel's shim stopped intercepting after an error of its own \
                             (see logs/shim.log); it only passes bytes now"
                        .to_owned(),
                    delivered: false,
                },
            );
            return;
        }
        let id = core.connect(events);
        let mut routed = Routed::default();
        match request {
            ShimRequest::Inject(injection) => {
                shared.log.line(format_args!(
                    "injection {} of delivery {} ({:?})",
                    id.0, injection.delivery_id, injection.kind
                ));
                core.call(&mut routed, &shared.log, |adapter, now, out| {
                    adapter.on_inject(id, injection, now, out);
                });
            }
            ShimRequest::AnswerApproval(answer) => {
                shared.log.line(format_args!(
                    "answer to approval {} ({})",
                    answer.request_id,
                    if answer.allow { "allow" } else { "deny" }
                ));
                core.call(&mut routed, &shared.log, |adapter, now, out| {
                    adapter.on_answer_approval(id, answer, now, out);
                });
            }
            ShimRequest::Status => {}
        }
        shared.route(routed);
        id
    };
    let _ = stream.set_read_timeout(None);
    loop {
        match reports.recv_timeout(PEER_CHECK) {
            Ok(line) => {
                if stream.write_all(&line).is_err() {
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if peer_gone(&stream) {
                    break;
                }
            }
            // The shim closed the connection after its last report.
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
    lock(&shared.core).disconnect(id);
}

/// True when the daemon closed its end (it sends nothing after the request).
fn peer_gone(stream: &UnixStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let mut byte = [0u8; 1];
    let gone = match (&*stream).read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    let _ = stream.set_nonblocking(false);
    gone
}
