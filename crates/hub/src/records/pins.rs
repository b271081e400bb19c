//! Pins in `hub.db`: the session a send to an agent goes to from a directory (or from every
//! directory), until unpinned.

use cross_agent_protocol::bridge::Pin;
use rusqlite::{OptionalExtension, params};

use crate::Agent;
use crate::db::HubDb;
use crate::error::Result;

impl HubDb {
    /// The pin of `agent` for `cwd_key` (`""` is the pin for every directory).
    pub fn pin(&self, agent: Agent, cwd_key: &str) -> Result<Option<(Pin, i64)>> {
        self.conn
            .query_row(
                "SELECT session_id, title, cwd, sticky, pinned_at, pinned_ms FROM pins
                 WHERE agent = ?1 AND cwd_key = ?2",
                params![agent.as_str(), cwd_key],
                |row| {
                    Ok((
                        Pin {
                            agent,
                            session_id: row.get(0)?,
                            title: row.get(1)?,
                            cwd: row.get(2)?,
                            sticky: row.get(3)?,
                            pinned_at: row.get(4)?,
                        },
                        row.get(5)?,
                    ))
                },
            )
            .optional()
            .map_err(|source| self.err("read a pin", source))
    }

    pub fn set_pin(&self, pin: &Pin, cwd_key: &str, pinned_ms: i64) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO pins (agent, cwd_key, session_id, title, cwd, sticky, pinned_at, pinned_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (agent, cwd_key) DO UPDATE SET session_id = ?3, title = ?4, cwd = ?5,
                    sticky = ?6, pinned_at = ?7, pinned_ms = ?8",
                params![
                    pin.agent.as_str(),
                    cwd_key,
                    pin.session_id,
                    pin.title,
                    pin.cwd,
                    pin.sticky,
                    pin.pinned_at,
                    pinned_ms
                ],
            )
            .map_err(|source| self.err("write a pin", source))?;
        Ok(())
    }

    pub fn remove_pin(&self, agent: Agent, cwd_key: &str) -> Result<()> {
        self.conn
            .execute(
                "DELETE FROM pins WHERE agent = ?1 AND cwd_key = ?2",
                params![agent.as_str(), cwd_key],
            )
            .map_err(|source| self.err("remove a pin", source))?;
        Ok(())
    }

    pub fn pins(&self) -> Result<Vec<Pin>> {
        let pins = self.rows(
            "list pins",
            "SELECT agent, session_id, title, cwd, sticky, pinned_at FROM pins ORDER BY pinned_at",
            [],
            |row| {
                // A pin of an agent this build does not know is left out, not an error.
                let Some(agent) = Agent::parse(&row.get::<_, String>(0)?) else {
                    return Ok(None);
                };
                Ok(Some(Pin {
                    agent,
                    session_id: row.get(1)?,
                    title: row.get(2)?,
                    cwd: row.get(3)?,
                    sticky: row.get(4)?,
                    pinned_at: row.get(5)?,
                }))
            },
        )?;
        Ok(pins.into_iter().flatten().collect())
    }
}
