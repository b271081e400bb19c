//! Late-answer watches in `hub.db`: started on an answer without its request id, claimed by
//! the daemon that polls them, ended by a late answer (recorded as a delivery of its own) or by
//! their deadline.

use cross_agent_protocol::bridge::DeliveryRecord;
use rusqlite::params;

use super::{Watch, WatchSummary, from_json, lock_is_live, state_str, to_json};
use crate::db::{HubDb, columns, select};
use crate::error::Result;

impl HubDb {
    /// Starts a late-answer watch on a delivery, running until `until_ms`.
    pub fn add_watch(&self, delivery_id: &str, since_ms: i64, until_ms: i64) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO late_answer_watches (delivery_id, since_ms, until_ms)
                 VALUES (?1, ?2, ?3)",
                params![delivery_id, since_ms, until_ms],
            )
            .map_err(|source| self.err("start a late-answer watch", source))?;
        Ok(())
    }

    /// Takes (or keeps) the watches nobody else holds — this owner's, unowned ones, and those
    /// whose owner's lease ran out or whose owner is gone — until `lease_until_ms`. Returns
    /// them with their records.
    pub fn claim_watches(
        &mut self,
        owner_pid: u32,
        now_ms: i64,
        lease_until_ms: i64,
    ) -> Result<Vec<Watch>> {
        let (tx, fail) = self.begin("take late-answer watches")?;
        let fail = &fail;
        let rows: Vec<(String, i64, i64, Option<u32>, i64, String)> = select(
            &tx,
            fail,
            "SELECT w.delivery_id, w.since_ms, w.until_ms, w.owner_pid, w.lease_until_ms,
             d.record FROM late_answer_watches w JOIN deliveries d USING (delivery_id)
             ORDER BY w.since_ms",
            [],
            columns,
        )?;
        let mut out = Vec::new();
        for (delivery_id, since_ms, until_ms, owner, lease, record) in rows {
            let held_elsewhere =
                owner.is_some_and(|pid| pid != owner_pid && lock_is_live(pid, lease, now_ms));
            if held_elsewhere {
                continue;
            }
            tx.execute(
                "UPDATE late_answer_watches SET owner_pid = ?2, lease_until_ms = ?3
                 WHERE delivery_id = ?1",
                params![delivery_id, owner_pid, lease_until_ms],
            )
            .map_err(fail)?;
            out.push(Watch {
                record: from_json(&record)?,
                since_ms,
                until_ms,
            });
        }
        tx.commit().map_err(fail)?;
        Ok(out)
    }

    /// Ends a watch (found, or past its time).
    pub fn end_watch(&self, delivery_id: &str) -> Result<()> {
        self.conn
            .execute(
                "DELETE FROM late_answer_watches WHERE delivery_id = ?1",
                params![delivery_id],
            )
            .map_err(|source| self.err("end a late-answer watch", source))?;
        Ok(())
    }

    /// Lets go of this owner's watches, so the next daemon resumes them at once.
    pub fn release_watches(&self, owner_pid: u32) -> Result<()> {
        self.conn
            .execute(
                "UPDATE late_answer_watches SET owner_pid = NULL, lease_until_ms = 0
                 WHERE owner_pid = ?1",
                params![owner_pid],
            )
            .map_err(|source| self.err("release late-answer watches", source))?;
        Ok(())
    }

    /// The newest `limit` watches for `bridge_status`, each with what it waits for, and how
    /// many there are in all. One query: a status call must not cost a read per watch, since a
    /// busy bridge holds hundreds (every answer without its request id starts one).
    pub fn watch_summaries(&self, limit: u32) -> Result<(Vec<WatchSummary>, u64)> {
        let read = |source| self.err("list late-answer watches", source);
        let total: i64 = self
            .conn
            .query_row("SELECT count(*) FROM late_answer_watches", [], |row| {
                row.get(0)
            })
            .map_err(read)?;
        let mut watches = self.rows(
            "list late-answer watches",
            // The limit is taken first, so the records' JSON is read for the rows shown only
            // (a plain join would decode every watched record before sorting).
            "SELECT w.delivery_id, w.until_ms, w.owner_pid,
                    json_extract(d.record, '$.request_id'), d.target_agent,
                    json_extract(d.record, '$.target_session_id')
             FROM (SELECT delivery_id, since_ms, until_ms, owner_pid
                   FROM late_answer_watches ORDER BY since_ms DESC LIMIT ?1) w
             LEFT JOIN deliveries d USING (delivery_id)
             ORDER BY w.since_ms DESC",
            [limit],
            |row| {
                Ok(WatchSummary {
                    delivery_id: row.get(0)?,
                    until_ms: row.get(1)?,
                    owner_pid: row.get(2)?,
                    request_id: row.get(3)?,
                    target_agent: row.get(4)?,
                    target_session_id: row.get(5)?,
                })
            },
        )?;
        watches.reverse();
        Ok((watches, u64::try_from(total).unwrap_or(0)))
    }

    /// Records a late answer as its own delivery (finished), and points the request's record at
    /// it, in one transaction.
    pub fn insert_late_answer(
        &mut self,
        late: &DeliveryRecord,
        target_key: &str,
        created_ms: i64,
        request: &DeliveryRecord,
    ) -> Result<()> {
        let (tx, fail) = self.begin("record a late answer")?;
        let fail = &fail;
        tx.execute(
            "INSERT INTO deliveries (delivery_id, state, target_agent, target_key, created_ms,
             record, finished_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5)",
            params![
                late.delivery_id,
                state_str(late.state),
                late.target_agent.as_str(),
                target_key,
                created_ms,
                to_json(late)?
            ],
        )
        .map_err(fail)?;
        tx.execute(
            "UPDATE deliveries SET record = ?2 WHERE delivery_id = ?1",
            params![request.delivery_id, to_json(request)?],
        )
        .map_err(fail)?;
        tx.execute(
            "DELETE FROM late_answer_watches WHERE delivery_id = ?1",
            params![request.delivery_id],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)
    }
}
