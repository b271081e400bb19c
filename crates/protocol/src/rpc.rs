//! The daemon RPC: what the thin processes (CLI, `cross-agent mcp`, shims) say to the per-user
//! daemon over its local socket, and what it answers.
//!
//! On the wire each message is one JSON object on one line (the framing lives in the `ipc`
//! crate). A client sends [`Request`]s, `{"id":7,"method":"status","params":{}}`; the daemon
//! answers each with a [`ServerMessage`] carrying the same id, either a `response` with the
//! method's result or an `error` with an [`ErrorCode`] and a message a person can act on.
//!
//! Every connection starts with `hello`: the client names its [`PROTOCOL_VERSION`] and the daemon
//! refuses a different one with [`ErrorCode::ProtocolMismatch`], naming both versions, so an old
//! daemon and a new client never talk past each other.
//!
//! Methods are declared once, in the table at the bottom of this file (`rpc_methods!`), which
//! pairs each method name with its `*Params` and `*Response`. Later features add their methods
//! (`send`, `bridge_status`, `pin`, …) to that table and nowhere else. The JSON Schema of every
//! frame and method is generated from these types and committed as `schema/daemon_rpc.json`
//! (see the `schema` module).

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The version of this RPC. Bump it whenever a change to the types in this module would make an
/// older daemon misread a newer client or the other way round; adding a method is such a change.
///
/// `handover` (and the optional `tools_version` / `draining` fields) were added without a bump
/// on purpose: a restart exists to replace an *older* daemon, so the new client must still be
/// able to say `hello` to it. An older daemon answers `handover` with
/// [`ErrorCode::MethodNotFound`], which the restart reads as "replace it the old way" (stop, then
/// start); nothing is misread.
///
/// `hosts_status` was added without a bump for the same reason: a new `cross-agent hosts status`
/// asking an older daemon gets [`ErrorCode::MethodNotFound`], which it reports as "restart the
/// daemon"; and a link to another machine says `hello` with this version, so a bump would refuse
/// every remote of the previous release for a method the link never calls. `on_host`,
/// `send_forwarded` and `decisions_query` likewise: a remote of the previous release answers
/// them `method_not_found`, which the forwarding daemon reports naming the host and both
/// versions, and everything else over that link keeps working.
pub const PROTOCOL_VERSION: u32 = 2;

/// Correlates a response with its request. Chosen by the client, unique per connection.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct RequestId(pub u64);

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// One request from a client: its id, and the method with its params, flattened so the frame
/// reads `{"id":1,"method":"hello","params":{…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// Echoed in the answer.
    pub id: RequestId,
    /// The method and its params.
    #[serde(flatten)]
    pub call: ClientRequest,
}

/// Everything the daemon writes to a client, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// The request with this id succeeded; `result` is the method's `*Response`.
    Response {
        /// The id of the request answered.
        id: RequestId,
        /// The method's `*Response`, as JSON; the client knows which type from the method it called.
        result: serde_json::Value,
    },
    /// The request with this id failed. `id` is absent when the frame was so broken that its id
    /// could not be read (not JSON, or too long).
    Error {
        /// The id of the request answered, when it could be read.
        id: Option<RequestId>,
        /// What went wrong.
        error: RpcError,
    },
}

/// A failed request: a machine-readable code and a message a person can act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RpcError {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// What happened and what to do about it, naming the path, pid or id involved.
    pub message: String,
    /// Structured detail for some codes (see [`ProtocolMismatchData`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl RpcError {
    /// An error without structured detail.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.as_str())
    }
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The frame was not a JSON object.
    ParseError,
    /// The frame was longer than the daemon accepts; it was skipped up to its newline.
    FrameTooLarge,
    /// The frame was JSON but not a request (no id, no method).
    InvalidRequest,
    /// The daemon does not know this method (it may be older than the client).
    MethodNotFound,
    /// The method is known but its params do not fit.
    InvalidParams,
    /// A request other than `hello` came before the handshake.
    HandshakeRequired,
    /// Client and daemon speak different protocol versions; `data` is [`ProtocolMismatchData`].
    ProtocolMismatch,
    /// The daemon is stopping and takes no new work.
    ShuttingDown,
    /// The daemon already serves the most connections it allows at once and closed this one;
    /// the message names the limit and how to raise it.
    TooManyConnections,
    /// The daemon failed for a reason of its own; the message and its log say which.
    Internal,
    /// A code this build does not know, sent by a newer peer.
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    /// The code as it is spelled on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "parse_error",
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::MethodNotFound => "method_not_found",
            ErrorCode::InvalidParams => "invalid_params",
            ErrorCode::HandshakeRequired => "handshake_required",
            ErrorCode::ProtocolMismatch => "protocol_mismatch",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::TooManyConnections => "too_many_connections",
            ErrorCode::Internal => "internal",
            ErrorCode::Unknown => "unknown",
        }
    }
}

/// The `data` of a [`ErrorCode::ProtocolMismatch`] error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProtocolMismatchData {
    /// The version the daemon speaks.
    pub daemon_protocol_version: u32,
    /// The version the client asked for.
    pub client_protocol_version: u32,
    /// The daemon's process id, so the person can stop it.
    pub daemon_pid: u32,
    /// The daemon's cross-agent version.
    pub daemon_version: String,
}

/// Which kind of process is talking to the daemon; used in logs and, later, to decide what a
/// connection may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientKind {
    /// A `cross-agent` CLI subcommand.
    Cli,
    /// A `cross-agent mcp` server registered in an agent.
    Mcp,
    /// A `cross-agent shim` between an editor extension and an agent binary.
    Shim,
    /// A replaced daemon of the same home, forwarding what happens to the deliveries it still
    /// carries (`forward_event`).
    Daemon,
    /// The daemon of another machine, over SSH (`ssh <dest> cross-agent rpc --stdio`): it asks
    /// exactly what a local client may ask, nothing more.
    Link,
    /// Anything else (benchmarks, tests, a future kind).
    #[serde(other)]
    Other,
}

/// A method of the RPC: its name, its params type (the type implementing this trait) and its
/// response type. Implemented by the table in `rpc_methods!` only.
pub trait Method: Serialize + DeserializeOwned + Send + 'static {
    /// The method's name on the wire.
    const NAME: &'static str;
    /// What the daemon answers on success.
    type Response: Serialize + DeserializeOwned + Send + 'static;
    /// Wraps these params into the request enum.
    fn into_request(self) -> ClientRequest;
}

/// `hello`: the first request on every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HelloParams {
    /// The [`PROTOCOL_VERSION`] the client was built with.
    pub protocol_version: u32,
    /// What kind of process the client is.
    pub client_kind: ClientKind,
    /// The client's process id, for logs.
    pub client_pid: u32,
    /// The client's cross-agent version, for logs and error messages.
    pub client_version: String,
}

/// The daemon's answer to `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HelloResponse {
    /// The version the daemon speaks (equal to the client's, or `hello` would have failed).
    pub protocol_version: u32,
    /// The daemon's process id.
    pub daemon_pid: u32,
    /// The daemon's cross-agent version.
    pub daemon_version: String,
    /// Counts daemon starts for this home, so a client can tell a restarted daemon from the one
    /// it talked to before.
    pub generation: u64,
    /// When this daemon started, RFC 3339 UTC.
    pub started_at: String,
    /// The version of the tool surface this daemon serves. An MCP server that reconnects to a
    /// daemon reporting another one tells its client `notifications/tools/list_changed`.
    /// Absent from daemons older than the handover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_version: Option<String>,
}

/// `status`: how the daemon is doing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusParams {}

/// The daemon's answer to `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusResponse {
    /// The daemon's process id.
    pub daemon_pid: u32,
    /// The daemon's cross-agent version.
    pub daemon_version: String,
    /// The RPC version it speaks.
    pub protocol_version: u32,
    /// Which start of the daemon for this home this is.
    pub generation: u64,
    /// When it started, RFC 3339 UTC.
    pub started_at: String,
    /// Whole seconds since it started.
    pub uptime_seconds: u64,
    /// Its state directory (`CROSS_AGENT_HOME`).
    pub home: String,
    /// The socket it listens on.
    pub socket: String,
    /// Earlier daemons of this home that were replaced and still finish what they carry.
    #[serde(default)]
    pub draining: Vec<DrainingDaemon>,
}

/// A replaced daemon that is still finishing the deliveries it carries (docs/spec/cross-agent-mcp.md §3, "reload").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DrainingDaemon {
    /// Its process id.
    pub pid: u32,
    /// Its generation.
    pub generation: u64,
    /// When it was told to drain, RFC 3339 UTC.
    pub since: String,
    /// What it still carries.
    pub carried: CarriedCounts,
}

/// What a daemon still carries: the work a replaced daemon waits for before it exits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CarriedCounts {
    /// Peer turns (CLI processes) it started and still watches.
    pub turns_running: u64,
    /// Deliveries it handed over whose answer is not recorded yet.
    pub answers_pending: u64,
    /// Late-answer watches it keeps on peer transcripts.
    pub late_answer_watches: u64,
}

impl CarriedCounts {
    /// Nothing left: a draining daemon may exit.
    pub fn is_empty(&self) -> bool {
        self.turns_running == 0 && self.answers_pending == 0 && self.late_answer_watches == 0
    }
}

/// `forward_event`: a daemon replaced by `cross-agent reload` / `daemon restart` still carries
/// deliveries while it drains, but no longer runs the Telegram bot (its successor polls it).
/// It tells the successor what happens to those deliveries, and the successor publishes it to
/// its own subscribers as if it had happened there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ForwardEventParams {
    /// The generation of the daemon the event happened in.
    pub from_generation: u64,
    /// What happened.
    pub event: ForwardedEvent,
}

/// An engine event that crosses from a replaced daemon to its successor, tagged by `kind`:
/// only what a subscriber of the successor needs (the bot notifies failed deliveries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ForwardedEvent {
    /// A delivery settled `failed`: its record as stored.
    DeliveryFailed {
        /// The delivery's record.
        record: Box<crate::bridge::DeliveryRecord>,
    },
}

/// The answer to `forward_event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ForwardEventResponse {
    /// How many of the successor's subscribers the event reached (0: nobody listens, e.g. no
    /// bot is paired).
    pub subscribers: u64,
}

/// `handover`: the steps by which `cross-agent daemon restart` / `cross-agent reload` move a
/// home from this daemon to a successor started from the current binary, without cutting off
/// what this one carries. The protocol is described in the daemon crate's `handover` module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HandoverParams {
    /// Which step.
    pub step: HandoverStep,
}

/// One step of the handover, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HandoverStep {
    /// Stop dispatching queued deliveries, record this daemon as draining and let go of the
    /// pidfile lock so a successor can take the home. Keeps serving.
    Release,
    /// The successor did not come up: take the pidfile lock back, dispatch again, serve as
    /// before.
    Abort {
        /// Why, for the log.
        reason: String,
    },
    /// The successor answers on the socket: stop accepting, answer every further request on
    /// the connections already open with [`ErrorCode::ShuttingDown`] (so clients move), finish
    /// what it carries, then exit.
    Drain {
        /// The successor's pid, for messages and the log.
        successor_pid: u32,
        /// The successor's generation.
        successor_generation: u64,
    },
}

/// The answer to each `handover` step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HandoverResponse {
    /// The daemon answering (the one being replaced).
    pub daemon_pid: u32,
    /// Its generation.
    pub generation: u64,
    /// What it carries at this moment.
    pub carried: CarriedCounts,
}

/// `shutdown`: stop the daemon. It answers first, then stops taking requests, finishes the ones
/// in hand and exits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShutdownParams {
    /// Why, for the daemon's log (`"cross-agent daemon stop"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The daemon's answer to `shutdown`, sent before it stops.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShutdownResponse {
    /// The process that is stopping; wait for it to exit.
    pub daemon_pid: u32,
    /// Its generation.
    pub generation: u64,
}

/// Declares the methods: the [`ClientRequest`] enum, [`METHODS`], and a [`Method`] impl per
/// params type. One line per method: `Variant => "name" (Params) -> Response`.
macro_rules! rpc_methods {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal ($params:ty) -> $response:ty ),* $(,)?) => {
        /// Every request a client can make, tagged by `method` with its `params`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "method", content = "params")]
        pub enum ClientRequest {
            $(
                $(#[$doc])*
                #[serde(rename = $name)]
                $variant($params),
            )*
        }

        impl ClientRequest {
            /// The method's name on the wire.
            pub fn method(&self) -> &'static str {
                match self {
                    $( ClientRequest::$variant(_) => $name, )*
                }
            }
        }

        /// Every method name, in table order.
        pub const METHODS: &[&str] = &[$($name),*];

        /// Each method's name with the schemas of its params and its response, in table order,
        /// their definitions gathered in `generator`.
        pub fn method_schemas(
            generator: &mut schemars::SchemaGenerator,
        ) -> Vec<(&'static str, schemars::Schema, schemars::Schema)> {
            vec![$((
                $name,
                generator.subschema_for::<$params>(),
                generator.subschema_for::<$response>(),
            )),*]
        }

        $(
            impl Method for $params {
                const NAME: &'static str = $name;
                type Response = $response;
                fn into_request(self) -> ClientRequest {
                    ClientRequest::$variant(self)
                }
            }
        )*
    };
}

rpc_methods! {
    /// Handshake: versions and identities. Must be the first request on a connection.
    Hello => "hello" (HelloParams) -> HelloResponse,
    /// The daemon's pid, generation, uptime, home and version.
    Status => "status" (StatusParams) -> StatusResponse,
    /// Stop the daemon after answering.
    Shutdown => "shutdown" (ShutdownParams) -> ShutdownResponse,
    /// `send_to_*`: queue a message for a peer session; answers with a receipt or a refusal.
    Send => "send" (crate::bridge::SendParams) -> crate::bridge::SendResponse,
    /// `list_agent_sessions`.
    ListSessions => "list_sessions" (crate::bridge::ListSessionsParams) -> crate::bridge::ListSessionsResponse,
    /// The live session index: the CLI's `sessions` and `sessions resolve`.
    IndexSessions => "index_sessions" (crate::bridge::IndexSessionsParams) -> crate::bridge::IndexSessionsResponse,
    /// `sessions --json` rendered by the daemon; its answer is followed by the listing's bytes.
    IndexListing => "index_listing" (crate::bridge::IndexListingParams) -> crate::bridge::IndexListingResponse,
    /// `cross-agent usage`: tokens and cost from the live index's kept usage parses.
    UsageReport => "usage_report" (crate::usage::UsageReportParams) -> crate::usage::UsageReportResponse,
    /// `pin_agent_session`.
    Pin => "pin" (crate::bridge::PinParams) -> crate::bridge::PinResponse,
    /// `bridge_status`, optionally for one delivery.
    BridgeStatus => "bridge_status" (crate::bridge::BridgeStatusParams) -> crate::bridge::BridgeStatusResponse,
    /// One step of replacing this daemon with a successor (`cross-agent daemon restart`).
    Handover => "handover" (HandoverParams) -> HandoverResponse,
    /// `cross-agent hook <event>`: an agent's hook payload; answers with what the hook prints.
    Hook => "hook" (crate::hook::HookParams) -> crate::hook::HookResponse,
    /// A replaced daemon's event about a delivery it carries, for this daemon's subscribers.
    ForwardEvent => "forward_event" (ForwardEventParams) -> ForwardEventResponse,
    /// A cross review's correction into the session it reviewed, past the escalation guard.
    ReviewCorrection => "review_correction" (crate::review::ReviewCorrectionParams) -> crate::review::ReviewCorrectionResponse,
    /// `cross-agent hosts status`: each SSH link's state (docs/remote.md).
    HostsStatus => "hosts_status" (crate::hosts::HostsStatusParams) -> crate::hosts::HostsStatusResponse,
    /// A request for another machine's sessions, forwarded over its link (docs/remote.md).
    OnHost => "on_host" (crate::hosts::OnHostParams) -> crate::hosts::OnHostResponse,
    /// A send another machine's daemon forwards here, keeping its delivery id.
    SendForwarded => "send_forwarded" (crate::hosts::SendForwardedParams) -> crate::bridge::SendResponse,
    /// This daemon's decisions log, counted (`decisions --host`).
    DecisionsQuery => "decisions_query" (crate::hosts::DecisionsQueryParams) -> crate::hosts::DecisionsQueryResponse,
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn request_frame_reads_id_method_params() {
        let request = Request {
            id: RequestId(7),
            call: HelloParams {
                protocol_version: 1,
                client_kind: ClientKind::Mcp,
                client_pid: 42,
                client_version: "0.1.0".into(),
            }
            .into_request(),
        };
        let wire = serde_json::to_value(&request).unwrap();
        assert_eq!(
            wire,
            json!({
                "id": 7,
                "method": "hello",
                "params": {
                    "protocol_version": 1,
                    "client_kind": "mcp",
                    "client_pid": 42,
                    "client_version": "0.1.0"
                }
            })
        );
        assert_eq!(serde_json::from_value::<Request>(wire).unwrap(), request);
    }

    #[test]
    fn empty_params_round_trip() {
        let wire = json!({"id": 1, "method": "status", "params": {}});
        let request: Request = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(request.call, ClientRequest::Status(StatusParams {}));
        assert_eq!(serde_json::to_value(&request).unwrap(), wire);

        let shutdown: Request =
            serde_json::from_value(json!({"id": 2, "method": "shutdown", "params": {}})).unwrap();
        assert_eq!(
            shutdown.call,
            ClientRequest::Shutdown(ShutdownParams { reason: None })
        );
    }

    #[test]
    fn unknown_method_is_an_error_not_a_panic() {
        let wire = json!({"id": 1, "method": "teleport", "params": {}});
        let error = serde_json::from_value::<Request>(wire).unwrap_err();
        // The method is what is wrong, not the frame: the message names it.
        assert!(
            error.to_string().starts_with("unknown variant `teleport`"),
            "{error}"
        );
    }

    #[test]
    fn server_messages_are_tagged_by_type() {
        let ok = ServerMessage::Response {
            id: RequestId(3),
            result: json!({"daemon_pid": 1, "generation": 2}),
        };
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"type": "response", "id": 3, "result": {"daemon_pid": 1, "generation": 2}})
        );
        let err = ServerMessage::Error {
            id: None,
            error: RpcError::new(ErrorCode::ParseError, "not JSON"),
        };
        assert_eq!(
            serde_json::to_value(&err).unwrap(),
            json!({"type": "error", "id": null, "error": {"code": "parse_error", "message": "not JSON"}})
        );
    }

    #[test]
    fn unknown_error_codes_and_client_kinds_are_tolerated() {
        let error: RpcError =
            serde_json::from_value(json!({"code": "brand_new", "message": "m"})).unwrap();
        assert_eq!(error.code, ErrorCode::Unknown);
        let kind: ClientKind = serde_json::from_value(json!("desktop_app")).unwrap();
        assert_eq!(kind, ClientKind::Other);
    }

    #[test]
    fn the_table_lists_every_method() {
        assert_eq!(
            METHODS,
            &[
                "hello",
                "status",
                "shutdown",
                "send",
                "list_sessions",
                "index_sessions",
                "index_listing",
                "usage_report",
                "pin",
                "bridge_status",
                "handover",
                "hook",
                "forward_event",
                "review_correction",
                "hosts_status",
                "on_host",
                "send_forwarded",
                "decisions_query"
            ]
        );
        assert_eq!(<StatusParams as Method>::NAME, "status");
        assert_eq!(
            ShutdownParams::default().into_request().method(),
            "shutdown"
        );
    }
}
