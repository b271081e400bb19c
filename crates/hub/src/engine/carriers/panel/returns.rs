//! Return traffic put into the sender's panel: the panel found again at that moment (a reopened
//! tab counts), the injection written and followed to `written`, retried a few times, then
//! failed undelivered — never a CLI. A sender's shim that queues it behind a running turn frees
//! the worker while the wait goes on.

use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState};
use cross_agent_protocol::panel::Injection;
use cross_agent_transports::panel::window;

use super::inject::{Ended, Following};
use super::{Door, FreeWorker};
use crate::Agent;
use crate::records::Job;
use crate::settings::UiHook;

/// How many times a return delivery looks for the sender's panel before it fails undelivered.
const RETURN_ATTEMPTS: u32 = 3;

impl Door<'_> {
    /// Puts return traffic into the sender's panel, found again now (a reopened tab counts);
    /// retried [`RETURN_ATTEMPTS`] times, then failed as undelivered — never a CLI.
    /// `freed` is told when the sender's shim queues it behind a running turn (see
    /// [`FreeWorker`]).
    pub(super) fn carry_return(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        freed: &mut Option<FreeWorker>,
    ) {
        let Some(route) = job.panel.clone() else {
            return;
        };
        let agent = record.target_agent;
        let session = route.session_id.clone().unwrap_or_default();
        let mut why = String::new();
        for attempt in 0..RETURN_ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(self.cx.return_retry());
            }
            let panels = self.cx.live_panels(UiHook::Auto);
            let Some(shim) = window::hosting(&panels, agent, &session) else {
                why = format!("no live panel holds {agent} session {session}");
                continue;
            };
            let injection = Injection {
                delivery_id: record.delivery_id.clone(),
                kind: route.kind,
                session_id: Some(session.clone()),
                new_session: false,
                text: job.body.clone(),
                request_id: None,
                title: None,
                sender_label: record.from_session.as_deref().map(|s| {
                    format!(
                        "{} · session {s}",
                        record.from_agent.map_or("?", Agent::as_str)
                    )
                }),
            };
            let socket = shim.registration.socket.clone();
            let mut how = Following {
                patience: None,
                held: None,
                freed: freed.take(),
            };
            let ended = self.wait_injection(record, &socket, injection, job, &mut how);
            *freed = how.freed.take();
            match ended {
                Ended::Done(_) | Ended::Confirmed(_) => {
                    record.state = DeliveryState::Delivered;
                    return;
                }
                Ended::Stopped => {
                    record.state = DeliveryState::Failed;
                    record.is_stopped_with_carrier = true;
                    record.error = Some("stopped with its carrier before the panel took it".into());
                    return;
                }
                Ended::Undelivered(reason) | Ended::Broken(reason) => why = reason,
            }
        }
        record.state = DeliveryState::Failed;
        record.is_undelivered = true;
        record.error = Some(format!(
            "not delivered to the sender's panel after {RETURN_ATTEMPTS} attempts ({why}); no \
             CLI was resumed for it. The answer stays on the request: read it with \
             bridge_status(delivery_id=\"{}\")",
            record.answer.answers_delivery_id.as_deref().unwrap_or("?")
        ));
        // The request's answer now lives only on its record.
        if let Some(request_id) = record.answer.answers_delivery_id.clone() {
            let db = self.cx.db();
            if let Ok(Some(mut request)) = db.delivery(&request_id)
                && request.return_delivery_id.as_deref() == Some(record.delivery_id.as_str())
            {
                request.is_return_status_only = true;
                let _ = db.update_delivery(&request);
            }
        }
    }
}
