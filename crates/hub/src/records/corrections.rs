//! The cross review's corrections sent into sessions (`review_corrections`, migration 6): what
//! the escalation guard counts — how many a session had in a day, when the last one went, and
//! whether the same correction went before. Only the hash of a correction is kept, never its
//! text.

use rusqlite::params;

use crate::db::HubDb;
use crate::error::Result;

/// Rows older than this are deleted when a new one is recorded: no rule looks further back
/// than a day, and a week leaves room for a person reading the table.
const KEPT_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// One correction sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentCorrection {
    /// `agent:session`, as the deliveries' `target_key`.
    pub target_key: String,
    pub sent_ms: i64,
    /// SHA-256 (hex) of the normalized correction.
    pub correction_hash: String,
    pub review_id: String,
    pub delivery_id: String,
    /// `cli`, `telegram` or `robot`.
    pub requested_by: String,
}

impl HubDb {
    /// Records a correction sent, and forgets those older than a week.
    pub fn record_correction(&self, sent: &SentCorrection) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO review_corrections
                   (target_key, sent_ms, correction_hash, review_id, delivery_id, requested_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    sent.target_key,
                    sent.sent_ms,
                    sent.correction_hash,
                    sent.review_id,
                    sent.delivery_id,
                    sent.requested_by
                ],
            )
            .map_err(|source| self.err("record a review correction", source))?;
        self.conn
            .execute(
                "DELETE FROM review_corrections WHERE sent_ms < ?1",
                params![sent.sent_ms.saturating_sub(KEPT_MS)],
            )
            .map_err(|source| self.err("forget old review corrections", source))?;
        Ok(())
    }

    /// The corrections sent to `target_key` at or after `since_ms`, oldest first.
    pub fn corrections_since(
        &self,
        target_key: &str,
        since_ms: i64,
    ) -> Result<Vec<SentCorrection>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT target_key, sent_ms, correction_hash, review_id, delivery_id, requested_by
                 FROM review_corrections WHERE target_key = ?1 AND sent_ms >= ?2
                 ORDER BY sent_ms, id",
            )
            .map_err(|source| self.err("read review corrections", source))?;
        let rows = statement
            .query_map(params![target_key, since_ms], |row| {
                Ok(SentCorrection {
                    target_key: row.get(0)?,
                    sent_ms: row.get(1)?,
                    correction_hash: row.get(2)?,
                    review_id: row.get(3)?,
                    delivery_id: row.get(4)?,
                    requested_by: row.get(5)?,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|source| self.err("read review corrections", source))?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn sent(key: &str, at: i64, hash: &str) -> SentCorrection {
        SentCorrection {
            target_key: key.into(),
            sent_ms: at,
            correction_hash: hash.into(),
            review_id: "rev_1".into(),
            delivery_id: format!("dlv_{at}"),
            requested_by: "cli".into(),
        }
    }

    #[test]
    fn corrections_survive_a_reopen_and_old_ones_are_forgotten() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hub.db");
        let db = HubDb::open(&path).unwrap();
        db.record_correction(&sent("claude:a", 1_000, "h1"))
            .unwrap();
        db.record_correction(&sent("codex:b", 2_000, "h2")).unwrap();
        drop(db);
        let db = HubDb::open(&path).unwrap();
        assert_eq!(
            db.corrections_since("claude:a", 0).unwrap(),
            vec![sent("claude:a", 1_000, "h1")]
        );
        assert_eq!(db.corrections_since("claude:a", 1_001).unwrap(), vec![]);
        // A week and more later, the first two are gone.
        db.record_correction(&sent("claude:a", KEPT_MS + 2_001, "h3"))
            .unwrap();
        assert_eq!(
            db.corrections_since("claude:a", 0).unwrap(),
            vec![sent("claude:a", KEPT_MS + 2_001, "h3")]
        );
        assert_eq!(db.corrections_since("codex:b", 0).unwrap(), vec![]);
    }
}
