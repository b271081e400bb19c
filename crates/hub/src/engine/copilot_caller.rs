//! Who a Copilot caller is (docs/spec/cross-agent-mcp.md, "Copilot (VS Code Agent Host)"): the
//! Copilot SDK gives its MCP process `COPILOT_AGENT_SESSION_ID`, the SDK session it serves, and
//! the editor's catalog records which session's default chat that SDK session backs
//! (`defaultChatProviderData.sdkSessionId`). The caller is that session only when exactly one
//! unarchived default chat names it; otherwise — missing (a side chat or sub-agent, or a chat
//! never registered), archived, or named by two — a send stops with the reason instead of
//! inventing a return address, and `bridge_status` says why the session is unknown. The newest
//! chat, a pin or the shared runtime's pid are never used instead.

use std::path::{Path, PathBuf};

use cross_agent_protocol::bridge::CallerContext;
use cross_agent_stores::copilot::endpoints::{self, EndpointAddress};
use cross_agent_stores::copilot::{catalog, sanitized_id};
use cross_agent_stores::{Session, Warnings};

use super::roots_for;
use crate::Agent;
use crate::caller::Caller;
use crate::records::{AgentHostJob, CopilotReturn};

/// How far up the process tree the host's owner is looked for.
const MAX_ANCESTRY: usize = 64;

/// Maps a Copilot caller's SDK session to its editor session (the caller's `session_id`); the
/// error says why it cannot be. A caller of another agent is left alone. Blocking: it reads the
/// catalogs.
pub(super) fn map_copilot_caller(
    caller: &mut Caller,
    context: &CallerContext,
) -> Result<(), String> {
    if caller.agent != Some(Agent::Copilot) || caller.started_turn.is_some() {
        return Ok(());
    }
    let Some(sdk) = caller.copilot_sdk_session.clone() else {
        return Ok(());
    };
    let roots = roots_for(context);
    let mut warnings = Warnings::default();
    let sessions = cross_agent_stores::copilot::list(&roots.copilot, &mut warnings);
    let backing: Vec<_> = sessions
        .iter()
        .filter(|s| {
            s.copilot
                .as_deref()
                .and_then(|d| d.sdk_session_id.as_deref())
                == Some(sdk.as_str())
        })
        .collect();
    let session = match backing.as_slice() {
        [] => {
            return Err(format!(
                "this call comes from Copilot SDK session {sdk} (COPILOT_AGENT_SESSION_ID), and no \
                 registered Copilot default chat in VS Code's catalogs is backed by it — a side \
                 chat or sub-agent, or a chat VS Code has not registered — so the caller's session \
                 cannot be told; nothing was sent (the bridge never invents a return address). \
                 Send from the session's main chat"
            ));
        }
        [one] => *one,
        several => {
            let ids: Vec<&str> = several.iter().map(|s| s.session_id.as_str()).collect();
            return Err(format!(
                "this call comes from Copilot SDK session {sdk} (COPILOT_AGENT_SESSION_ID), and \
                 {} Copilot sessions name it as their default chat ({}); one is not picked, so \
                 nothing was sent. Remove the stale one in VS Code",
                ids.len(),
                ids.join(", ")
            ));
        }
    };
    if session.copilot.as_deref().is_some_and(|d| d.archived) {
        return Err(format!(
            "this call comes from Copilot SDK session {sdk} (COPILOT_AGENT_SESSION_ID), whose \
             Copilot session {} is archived in VS Code; an archived session is no return address, \
             so nothing was sent. Unarchive it, or send from an active chat",
            session.session_id
        ));
    }
    caller.session_id = Some(session.session_id.clone());
    caller.copilot_return = return_route(session, context, &sdk);
    caller.how = format!(
        "agent from COPILOT_AGENT_SESSION_ID, session from its SDK session {sdk} mapped through \
         the catalog's defaultChatProviderData"
    );
    Ok(())
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
/// error says which failed. Blocking.
pub(in crate::engine) fn verify_return(back: &CopilotReturn) -> Result<(), String> {
    match catalog::read_session_db(Path::new(&back.session_db)) {
        Ok(metadata)
            if metadata.sdk_session_id.as_deref() == Some(back.sdk_session_id.as_str())
                && !metadata.archived => {}
        Ok(_) => {
            return Err(format!(
                "the sender's Copilot session {} no longer has SDK session {} as its unarchived default chat",
                back.route.session_uri, back.sdk_session_id
            ));
        }
        Err(problem) => return Err(problem.message),
    }
    let registry = endpoints::read_registry(
        &PathBuf::from(&back.route.endpoint_dir),
        cross_agent_process::is_alive,
    );
    if !registry.endpoints.iter().any(|e| e.pid == back.owner_pid) {
        return Err(format!(
            "the Agent Host (pid {}) of the sender's Copilot session is no longer running",
            back.owner_pid
        ));
    }
    let mut pid = back.mcp_pid;
    for _ in 0..MAX_ANCESTRY {
        match cross_agent_process::parent_of(pid) {
            Some(parent) if parent == back.owner_pid => return Ok(()),
            Some(parent) if parent > 1 && parent != pid => pid = parent,
            Some(_) | None => break,
        }
    }
    Err(format!(
        "the sender's MCP process (pid {}) is no longer below its Agent Host (pid {})",
        back.mcp_pid, back.owner_pid
    ))
}
