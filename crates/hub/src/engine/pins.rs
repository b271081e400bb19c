//! `pin_agent_session`: a sticky pin by session id or exact name, or unpinning — admission's
//! ([`Admission::pin`]); the engine's `pin` is the façade over it.

use std::path::PathBuf;

use cross_agent_decisions::events;
use cross_agent_protocol::bridge::{Pin, PinParams, PinResponse, Scope};
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::resolve::Lookup;
use cross_agent_stores::{StoreError, UnixMillis};

use super::admission::Admission;
use super::{Engine, cwd_key, lookup_refusal, non_blank};
use crate::error::Result;
use crate::settings::CallSettings;

impl Engine {
    /// `pin_agent_session`: pins a session by id or exact name (sticky, never expires), or
    /// unpins with an empty `session_id`.
    pub fn pin(&self, params: PinParams) -> Result<PinResponse> {
        self.inner.admission.pin(params)
    }
}

impl Admission {
    /// `pin_agent_session`, its decision recorded.
    pub(super) fn pin(&self, params: PinParams) -> Result<PinResponse> {
        let agent = params.agent;
        let response = self.answer_pin(params)?;
        self.decisions.record(events::pin(agent, &response));
        Ok(response)
    }

    fn answer_pin(&self, params: PinParams) -> Result<PinResponse> {
        let cwd_text = non_blank(params.cwd.as_deref()).or(non_blank(params.caller.cwd.as_deref()));
        let key = cwd_key(cwd_text);
        let previous = self.db().pin(params.agent, &key)?.map(|(pin, _)| pin);
        let Some(query) = non_blank(params.session_id.as_deref()) else {
            self.db().remove_pin(params.agent, &key)?;
            return Ok(PinResponse::Unpinned { previous });
        };
        let settings = CallSettings::from_settings(&params.caller.settings);
        let cwd = PathBuf::from(cwd_text.unwrap_or("/"));
        let asked = Lookup {
            agent: params.agent,
            scope: Scope::Any,
            cwd: &cwd,
            bound: settings.name_bound(params.agent, settings.scope),
        };
        // A session written a moment ago is walked for before it is called missing, as a send
        // naming it does.
        let found = self.look_up_named(
            &params.caller,
            query,
            asked,
            |error| matches!(error, StoreError::NoSuchSession { .. }),
            |_, found| found.map(|found| found.session.to_session()),
        );
        let found = match found {
            Ok(found) => found,
            Err(error) => return Ok(PinResponse::Refused(lookup_refusal(error, params.agent))),
        };
        let pin = Pin {
            agent: params.agent,
            session_id: found.session_id.clone(),
            title: found.title.clone(),
            cwd: found.cwd.as_ref().map(|p| p.to_string_lossy().into_owned()),
            sticky: true,
            pinned_at: now_rfc3339(),
        };
        self.db().set_pin(&pin, &key, UnixMillis::now().0)?;
        Ok(PinResponse::Pinned { pin, previous })
    }
}
