//! One delivery and its answer, for a sender that waits for it outside MCP (the daemon's
//! Telegram bot relays a prompt's answer to the phone).

use cross_agent_protocol::bridge::DeliveryRecord;

use super::Engine;
use super::answers::transcript_answer;
use crate::error::Result;

impl Engine {
    /// The record of `delivery_id` (`None` if there is none) and, once it is finished, its
    /// answer as the peer's transcript holds it, without the closing request-id line; the
    /// record's `reply_preview` stands in when the transcript has none.
    pub fn delivery_answer(
        &self,
        delivery_id: &str,
    ) -> Result<Option<(DeliveryRecord, Option<String>)>> {
        let Some(record) = self.db().delivery(delivery_id)? else {
            return Ok(None);
        };
        if !record.state.is_finished() {
            return Ok(Some((record, None)));
        }
        // A forwarded delivery's transcript is on the other machine: its answer is the copy
        // the follower took from the remote record.
        let from_transcript = match record.host {
            Some(_) => None,
            None => transcript_answer(&record),
        };
        let answer = from_transcript
            .or_else(|| record.reply_preview.clone())
            .map(|text| {
                let trimmed = text.trim_end();
                match trimmed.rsplit_once('\n') {
                    Some((body, last)) if last.trim() == record.request_id => body.to_owned(),
                    _ if trimmed.trim() == record.request_id => String::new(),
                    _ => trimmed.to_owned(),
                }
            });
        Ok(Some((record, answer)))
    }
}
