//! Who a Copilot caller is (docs/spec/cross-agent-mcp.md, "Copilot (VS Code Agent Host)"): the
//! Copilot SDK gives its MCP process `COPILOT_AGENT_SESSION_ID`, the SDK session it serves, and
//! the editor's catalog records which session's default chat that SDK session backs
//! (`defaultChatProviderData.sdkSessionId`). The caller is that session only when exactly one
//! unarchived default chat names it; otherwise — missing (a side chat or sub-agent, or a chat
//! never registered), archived, or named by two — a send stops with the reason instead of
//! inventing a return address, and `bridge_status` says why the session is unknown. The newest
//! chat, a pin or the shared runtime's pid are never used instead.

use cross_agent_protocol::bridge::CallerContext;
use cross_agent_stores::Warnings;

use super::roots_for;
use crate::Agent;
use crate::caller::Caller;

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
    caller.how = format!(
        "agent from COPILOT_AGENT_SESSION_ID, session from its SDK session {sdk} mapped through \
         the catalog's defaultChatProviderData"
    );
    Ok(())
}
