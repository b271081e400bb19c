//! The client side of VS Code's Agent Host Protocol (AHP), the wire through which cross-agent
//! reaches GitHub Copilot sessions in VS Code.
//!
//! Where it sits (see `docs/architecture.md`, "Crates"): below the engine's Copilot carrier,
//! beside `transports`. It takes a socket path and a connection token (finding them in the
//! host's endpoint registry is the `stores` crate's job) and speaks JSON-RPC over a WebSocket on
//! that Unix socket, using Microsoft's `ahp` client and `ahp-types` wire types:
//!
//! - [`HostConnection::connect`] negotiates a protocol version (VS Code 1.141 speaks `0.10.0`);
//! - [`HostConnection::list_sessions`] and [`HostConnection::root_events`] give the host's own
//!   listing and keep it current;
//! - [`HostConnection::deliver`] starts a turn in a session's default chat and reports whether
//!   the host accepted it, refused it, or left the outcome unknown; [`DeliveredTurn::answer`]
//!   collects the reply, surfacing tool calls that wait for a confirmation as
//!   [`PendingApproval`]s, which [`HostConnection::confirm_tool_call`] answers;
//! - [`HostPool`] keeps one connection per host endpoint for the carrier, replacing it
//!   lazily when it ends or the endpoint's entry changes;
//! - [`HostConnection::watch_input`] follows the confirmations a session waits on, whoever
//!   started the turn (for the Telegram bot).
//!
//! Every wire fact used here, with its source, is in `docs/observed/copilot.md`. The token never
//! appears in an error, a log line or a `Debug` output ([`ConnectionToken`]).

mod client;
mod deliver;
mod error;
mod input;
mod kept;
mod listing;
mod pool;
mod token;
mod transport;

pub use ahp_types::state::{ConfirmationOption, ConfirmationOptionKind};
pub use client::{HostConnection, OFFERED_PROTOCOL_VERSIONS};
pub use deliver::{Answer, ConfirmOutcome, DeliverRequest, DeliveredTurn, PendingApproval};
pub use error::{Error, Result};
pub use input::{InputChange, InputWatch};
pub use listing::{RootEvent, RootEvents, SessionInfo, SessionStatusBits, editor_id};
pub use pool::{EndpointKey, HostPool};
pub use token::ConnectionToken;
pub use transport::MAX_MESSAGE_BYTES;
