//! `/limits`: Codex's rate-limit windows on the phone, the same as `cross-agent usage --limits`
//! (the share used, the window, when it resets). The daemon reads them
//! ([`super::SessionHost::limits`]) on a blocking task, so the poller never waits for the stores.

use super::{Desk, Place, say_long};
use crate::api::TelegramApi;
use crate::queue::OutboundQueue;

impl Desk {
    /// Answers `/limits` at `place`.
    pub(super) async fn limits<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
    ) {
        let Some(host) = self.host() else {
            say_long(out, place, "Usage is not available on this daemon.");
            return;
        };
        let answer = tokio::task::spawn_blocking(move || host.limits())
            .await
            .unwrap_or_else(|e| Err(format!("reading the rate limits failed: {e}")));
        let text = match answer {
            Ok(text) => text,
            Err(reason) => format!("Could not read Codex's rate limits: {reason}"),
        };
        say_long(out, place, &text);
    }
}
