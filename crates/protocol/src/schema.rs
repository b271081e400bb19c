//! The JSON Schemas of the wire, generated from the types: the daemon RPC and the MCP tools'
//! inputs and outputs. They are committed under `crates/protocol/schema/`, and
//! `tests/schema_fixtures.rs` fails when the types and the files disagree, so a change to the
//! interface is seen in review rather than found by a peer.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::rpc::{self, PROTOCOL_VERSION, Request, ServerMessage};

/// The committed files: a name under `schema/` and its content.
pub fn fixtures() -> Vec<(&'static str, Value)> {
    vec![
        ("daemon_rpc.json", daemon_rpc()),
        ("mcp_tools.json", crate::tools::tools_schema()),
        ("panel_shim.json", panel_shim()),
    ]
}

/// The daemon RPC: a frame is a [`Request`] or a [`ServerMessage`]; `x-methods` pairs each
/// method with its params and its response (a `response` frame's `result`).
pub fn daemon_rpc() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let request = generator.subschema_for::<Request>();
    let server_message = generator.subschema_for::<ServerMessage>();
    let mut methods = Map::new();
    for (name, params, response) in rpc::method_schemas(&mut generator) {
        methods.insert(
            name.to_owned(),
            json!({"params": params, "response": response}),
        );
    }
    let definitions: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "cross-agent daemon RPC",
        "description": "One JSON object per line on the daemon's socket: a client sends Request \
            frames, the daemon answers each with a ServerMessage carrying the same id.",
        "x-protocol-version": PROTOCOL_VERSION,
        "anyOf": [request, server_message],
        "x-methods": methods,
        "$defs": definitions,
    })
}

/// The panel shims' side: the registration file in `panels/` and the lines on a shim's socket.
pub fn panel_shim() -> Value {
    use crate::panel::{PANEL_PROTOCOL_VERSION, PanelRegistration, ShimEvent, ShimRequest};
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let registration = generator.subschema_for::<PanelRegistration>();
    let request = generator.subschema_for::<ShimRequest>();
    let event = generator.subschema_for::<ShimEvent>();
    let definitions: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "cross-agent panel shim",
        "description": "panels/<agent>-<pid>.json is a registration; on the shim's socket the \
            daemon writes one request line and reads event lines until the shim closes it.",
        "x-protocol-version": PANEL_PROTOCOL_VERSION,
        "x-registration": registration,
        "x-request": request,
        "x-event": event,
        "$defs": definitions,
    })
}

/// What kind of JSON value `value` is, as an error message names it ("a string", "an
/// object"): for saying why a peer's input does not fit the schema.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
