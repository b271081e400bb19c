//! Who a Copilot caller is (docs/spec/cross-agent-mcp.md, "Copilot (VS Code Agent Host)"): the
//! Copilot SDK gives its MCP process `COPILOT_AGENT_SESSION_ID`, the SDK session it serves, and
//! the editor's catalog records which session's default chat that SDK session backs
//! (`defaultChatProviderData.sdkSessionId`). The caller is that session only when exactly one
//! unarchived default chat names it; otherwise — missing (a side chat or sub-agent, or a chat
//! never registered), archived, or named by two — a send stops with the reason instead of
//! inventing a return address, and `bridge_status` says why the session is unknown. The newest
//! chat, a pin or the shared runtime's pid are never used instead. A Host session named in the
//! call's `_meta` (`cross_agent_caller::COPILOT_CALLER_SESSION_META_KEY`, not seen on the wire
//! yet) must be the same session; alone, it must be one unarchived session a live host serves.

use std::path::{Path, PathBuf};

use cross_agent_protocol::bridge::CallerContext;
use cross_agent_stores::copilot::endpoints::{self, Endpoint, EndpointAddress};
use cross_agent_stores::copilot::{catalog, sanitized_id};
use cross_agent_stores::{Session, Warnings};

use super::roots_for;
use crate::Agent;
use crate::caller::Caller;
use crate::records::{AgentHostJob, CopilotReturn};

/// How far up the process tree the host's owner is looked for.
const MAX_ANCESTRY: usize = 64;

/// Maps a Copilot caller to its editor session (the caller's `session_id`); the error says why
/// it cannot be. Its SDK session (`COPILOT_AGENT_SESSION_ID`) is mapped through the catalog; a
/// Host session named in the call's `_meta` must then be the same one, and stands alone when
/// the variable is absent. Neither: the caller stays unknown (status-only). A caller of another
/// agent is left alone. Blocking: it reads the catalogs.
pub(super) fn map_copilot_caller(
    caller: &mut Caller,
    context: &CallerContext,
) -> Result<(), String> {
    if caller.agent != Some(Agent::Copilot) || caller.started_turn.is_some() {
        return Ok(());
    }
    let sdk = caller.copilot_sdk_session.clone();
    let named = caller.copilot_host_session.clone();
    if sdk.is_none() && named.is_none() {
        return Ok(());
    }
    let roots = roots_for(context);
    let mut warnings = Warnings::default();
    let sessions = cross_agent_stores::copilot::list(&roots.copilot, &mut warnings);
    let named_id = named.as_deref().map(host_uuid).transpose()?;
    let session = match (&sdk, &named_id) {
        (Some(sdk), _) => {
            let session = backed_by(&sessions, sdk)?;
            if let (Some(named), Some(id)) = (&named, &named_id)
                && session.session_id != *id
            {
                return Err(format!(
                    "this call's MCP caller metadata names Copilot session {named}, but its \
                    SDK session {sdk} (COPILOT_AGENT_SESSION_ID) is the default chat of \
                    Copilot session {}; the two must name the same session, so nothing was \
                    sent (the bridge never picks one). Send from the session's main chat",
                    session.session_id
                ));
            }
            session
        }
        (None, Some(id)) => named_session(&sessions, id, named.as_deref().unwrap_or(id))?,
        (None, None) => return Ok(()),
    };
    if session.copilot.as_deref().is_some_and(|d| d.archived) {
        return Err(format!(
            "this call comes from {}, whose Copilot session {} is archived in VS Code; an \
            archived session is no return address, so nothing was sent. Unarchive it, or send \
            from an active chat",
            clue(sdk.as_deref(), named.as_deref()),
            session.session_id
        ));
    }
    let how = match (&sdk, &named) {
        (Some(sdk), Some(_)) => format!(
            "agent from COPILOT_AGENT_SESSION_ID, session from its SDK session {sdk} mapped \
            through the catalog's defaultChatProviderData, the same one the call's MCP caller \
            metadata names"
        ),
        (Some(sdk), None) => format!(
            "agent from COPILOT_AGENT_SESSION_ID, session from its SDK session {sdk} mapped \
            through the catalog's defaultChatProviderData"
        ),
        (None, _) => "agent and session from the call's MCP caller metadata, one unarchived \
        session on a live Agent Host"
            .to_owned(),
    };
    let backing = sdk.or_else(|| {
        session
            .copilot
            .as_deref()
            .and_then(|d| d.sdk_session_id.clone())
    });
    caller.session_id = Some(session.session_id.clone());
    caller.copilot_return = backing.and_then(|sdk| return_route(session, context, &sdk));
    caller.how = how;
    Ok(())
}

/// The one registered default chat backed by SDK session `sdk`, or why there is not one.
fn backed_by<'s>(sessions: &'s [Session], sdk: &str) -> Result<&'s Session, String> {
    let backing: Vec<_> = sessions
        .iter()
        .filter(|s| {
            s.copilot
                .as_deref()
                .and_then(|d| d.sdk_session_id.as_deref())
                == Some(sdk)
        })
        .collect();
    match backing.as_slice() {
        [] => Err(format!(
            "this call comes from Copilot SDK session {sdk} (COPILOT_AGENT_SESSION_ID), and no \
            registered Copilot default chat in VS Code's catalogs is backed by it — a side \
            chat or sub-agent, or a chat VS Code has not registered — so the caller's session \
            cannot be told; nothing was sent (the bridge never invents a return address). Send \
            from the session's main chat"
        )),
        [one] => Ok(*one),
        several => {
            let ids: Vec<&str> = several.iter().map(|s| s.session_id.as_str()).collect();
            Err(format!(
                "this call comes from Copilot SDK session {sdk} (COPILOT_AGENT_SESSION_ID), \
                and {} Copilot sessions name it as their default chat ({}); one is not picked, \
                so nothing was sent. Remove the stale one in VS Code",
                ids.len(),
                ids.join(", ")
            ))
        }
    }
}

/// The one registered session with Host UUID `id` that a live Agent Host serves, when the
/// call's metadata alone names the caller (`named`, as received), or why there is not one.
fn named_session<'s>(
    sessions: &'s [Session],
    id: &str,
    named: &str,
) -> Result<&'s Session, String> {
    let found: Vec<_> = sessions.iter().filter(|s| s.session_id == id).collect();
    let session = match found.as_slice() {
        [] => {
            return Err(format!(
                "this call's MCP caller metadata names Copilot session {named}, and VS Code's \
                catalogs register no such session, so the caller's session cannot be told; \
                nothing was sent (the bridge never invents a return address)"
            ));
        }
        [one] => *one,
        several => {
            let places: Vec<&str> = several
                .iter()
                .filter_map(|s| s.copilot.as_deref().map(|d| d.user_data_dir.as_str()))
                .collect();
            return Err(format!(
                "this call's MCP caller metadata names Copilot session {named}, which {} \
                editors' catalogs register ({}); one is not picked, so nothing was sent",
                several.len(),
                places.join(", ")
            ));
        }
    };
    if !session.copilot.as_deref().is_some_and(|d| d.live) {
        return Err(format!(
            "this call's MCP caller metadata names Copilot session {named}, and no running \
            Agent Host serves it, so it cannot be the caller; nothing was sent. Open it in VS \
            Code"
        ));
    }
    Ok(session)
}

/// The Host UUID in a session URI (`ahp-session:/<uuid>`, `copilotcli:/<uuid>`) or a bare
/// UUID; the error names the value.
fn host_uuid(named: &str) -> Result<String, String> {
    let id = match named.split_once(":/") {
        Some((scheme, rest))
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            rest.trim_start_matches('/')
        }
        Some(_) | None => named,
    };
    if id.is_empty() || id.contains(['/', ':']) || id.chars().any(char::is_whitespace) {
        return Err(format!(
            "this call's MCP caller metadata names Copilot session {named:?}, which is neither \
            a session URI nor a session UUID; nothing was sent"
        ));
    }
    Ok(id.to_owned())
}

/// What named the caller, for a refusal.
fn clue(sdk: Option<&str>, named: Option<&str>) -> String {
    match (sdk, named) {
        (Some(sdk), _) => format!("Copilot SDK session {sdk} (COPILOT_AGENT_SESSION_ID)"),
        (None, Some(named)) => format!("Copilot session {named} (MCP caller metadata)"),
        (None, None) => "an unknown Copilot session".to_owned(),
    }
}

/// The caller's session on the live host whose owner is an ancestor of the MCP process that
/// called, when there is one: its verified return route. A host that merely lists the session
/// (a stored catalog entry) is no return address.
fn return_route(session: &Session, context: &CallerContext, sdk: &str) -> Option<CopilotReturn> {
    let details = session.copilot.as_deref()?;
    let roots = roots_for(context);
    let place = roots
        .copilot
        .places
        .iter()
        .find(|p| p.user_data.to_string_lossy() == details.user_data_dir.as_str())?;
    let endpoint_dir = place.endpoint_dir.as_deref()?;
    let registry = endpoints::read_registry(endpoint_dir, cross_agent_process::is_alive);
    let ancestors: Vec<u32> = context.ancestry.iter().map(|a| a.pid).collect();
    let owner = registry.endpoints.iter().find(|e| {
        matches!(e.address, EndpointAddress::Socket { .. }) && ancestors.contains(&e.pid)
    })?;
    let session_db = place
        .session_dir
        .as_deref()?
        .join(sanitized_id(&session.session_id))
        .join("session.db");
    Some(CopilotReturn {
        route: AgentHostJob {
            session_uri: details.session_uri.clone(),
            user_data_dir: details.user_data_dir.clone(),
            endpoint_dir: endpoint_dir.to_string_lossy().into_owned(),
            is_busy_skipped: false,
        },
        sdk_session_id: sdk.to_owned(),
        session_db: session_db.to_string_lossy().into_owned(),
        owner_pid: owner.pid,
        mcp_pid: context.pid,
    })
}

/// Checks a Copilot sender's return route again, right before its answer is dispatched: the
/// SDK session still backs the session's unarchived default chat, the host's endpoint is still
/// published by the same owner, and that owner is still an ancestor of the MCP process. The
/// error says which failed. Returns the owner's registry entry as read now, so the carrier
/// connects to exactly the host it checked without reading the registry again. Blocking.
pub(in crate::engine) fn verify_return(back: &CopilotReturn) -> Result<Endpoint, String> {
    match catalog::read_session_db(Path::new(&back.session_db)) {
        Ok(metadata)
            if metadata.sdk_session_id.as_deref() == Some(back.sdk_session_id.as_str())
                && !metadata.archived => {}
        Ok(_) => {
            return Err(format!(
                "the sender's Copilot session {} no longer has SDK session {} as its \
                unarchived default chat",
                back.route.session_uri, back.sdk_session_id
            ));
        }
        Err(problem) => return Err(problem.message),
    }
    let registry = endpoints::read_registry(
        &PathBuf::from(&back.route.endpoint_dir),
        cross_agent_process::is_alive,
    );
    let Some(owner) = registry
        .endpoints
        .into_iter()
        .find(|e| e.pid == back.owner_pid && matches!(e.address, EndpointAddress::Socket { .. }))
    else {
        return Err(format!(
            "the Agent Host (pid {}) of the sender's Copilot session is no longer running",
            back.owner_pid
        ));
    };
    let mut pid = back.mcp_pid;
    for _ in 0..MAX_ANCESTRY {
        match cross_agent_process::parent_of(pid) {
            Some(parent) if parent == back.owner_pid => return Ok(owner),
            Some(parent) if parent > 1 && parent != pid => pid = parent,
            Some(_) | None => break,
        }
    }
    Err(format!(
        "the sender's MCP process (pid {}) is no longer below its Agent Host (pid {})",
        back.mcp_pid, back.owner_pid
    ))
}
