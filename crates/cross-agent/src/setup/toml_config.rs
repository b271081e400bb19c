//! Edits of TOML configuration files (Codex's `~/.codex/config.toml`, Grok's
//! `~/.grok/config.toml`) with `toml_edit`, which keeps comments, key order and layout: the
//! `[mcp_servers.cross-agent]` table is added, compared, and taken out again, and nothing else
//! in the file changes.

use anyhow::{Result, anyhow};
use serde_json::{Map, Value};
use toml_edit::{Decor, DocumentMut, InlineTable, Item, Table};

use super::user_edits::{Dropped, comments_in};

/// The table every agent keeps its MCP servers in.
const SERVERS: &str = "mcp_servers";

/// One parsed TOML document being edited.
pub struct TomlDoc {
    doc: DocumentMut,
}

impl TomlDoc {
    /// Parses `text` (a missing file is an empty document). `name` names the file in errors.
    pub fn parse(name: &str, text: Option<&str>) -> Result<TomlDoc> {
        let doc = text
            .unwrap_or("")
            .parse::<DocumentMut>()
            .map_err(|error| anyhow!("{name} is not valid TOML: {error}"))?;
        Ok(TomlDoc { doc })
    }

    pub fn text(&self) -> String {
        self.doc.to_string()
    }

    /// `[mcp_servers.<name>]` as JSON, when present.
    pub fn server(&self, name: &str) -> Option<Value> {
        self.doc
            .get(SERVERS)?
            .as_table_like()?
            .get(name)
            .map(item_to_json)
    }

    /// Makes the keys of `entries` in `[mcp_servers.<name>]` hold their values (a new table
    /// gets them in that order); a key the person added there stays, and nothing changes
    /// when every key already holds its value.
    pub fn set_server(&mut self, name: &str, entries: &[(&str, Value)]) -> Result<()> {
        let document_has_content = !self.doc.as_table().is_empty();
        let servers = self
            .doc
            .entry(SERVERS)
            .or_insert_with(|| {
                let mut servers = Table::new();
                servers.set_implicit(true);
                Item::Table(servers)
            })
            .as_table_mut()
            .ok_or_else(|| anyhow!("`{SERVERS}` is not a table"))?;
        if let Some(existing) = servers.get_mut(name).and_then(Item::as_table_like_mut) {
            for (key, value) in entries {
                if existing.get(key).map(item_to_json).as_ref() == Some(value) {
                    continue;
                }
                let mut new_value = json_to_toml(value)?;
                match existing.get_mut(key) {
                    Some(Item::Value(old)) => {
                        // Keep a comment the person wrote after the old value.
                        *new_value.decor_mut() = old.decor().clone();
                        *old = new_value;
                    }
                    _ => {
                        existing.insert(key, Item::Value(new_value));
                    }
                }
            }
            return Ok(());
        }
        let mut table = Table::new();
        for (key, value) in entries {
            table.insert(key, Item::Value(json_to_toml(value)?));
        }
        if document_has_content {
            // A blank line between the person's last table and ours.
            table.decor_mut().set_prefix("\n");
        }
        servers.insert(name, Item::Table(table));
        Ok(())
    }

    /// Takes `[mcp_servers.<name>]` out (or puts back what `backup` had there), then the
    /// `mcp_servers` table itself when it is left empty and `backup` did not have it.
    pub fn remove_server(&mut self, name: &str, backup: Option<&TomlDoc>) -> Result<()> {
        let original = backup.and_then(|b| b.doc.get(SERVERS)?.as_table()?.get(name).cloned());
        let Some(servers) = self.doc.get_mut(SERVERS).and_then(Item::as_table_mut) else {
            return Ok(());
        };
        if servers.get(name).is_none() {
            return Ok(());
        }
        match original {
            Some(item) => {
                servers.insert(name, item);
            }
            None => {
                servers.remove(name);
            }
        }
        let had_servers = backup.is_some_and(|b| b.doc.get(SERVERS).is_some());
        if servers.is_empty() && !had_servers {
            self.doc.remove(SERVERS);
        }
        Ok(())
    }

    /// The comments in `[mcp_servers.<name>]`: above its header, after it, and at each of
    /// its keys. `at` names the table in the answer.
    pub fn server_comments(&self, name: &str, at: &str) -> Vec<Dropped> {
        let Some(table) = self
            .doc
            .get(SERVERS)
            .and_then(Item::as_table)
            .and_then(|servers| servers.get(name))
            .and_then(Item::as_table)
        else {
            return Vec::new();
        };
        let mut out = decor_comments(table.decor(), at);
        for (key, item) in table.iter() {
            let path = format!("{at}.{key}");
            if let Some(key) = table.key(key) {
                out.extend(decor_comments(key.leaf_decor(), &path));
            }
            match item {
                Item::Value(value) => out.extend(decor_comments(value.decor(), &path)),
                Item::Table(table) => out.extend(decor_comments(table.decor(), &path)),
                Item::None | Item::ArrayOfTables(_) => {}
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.doc.as_table().is_empty()
    }
}

fn decor_comments(decor: &Decor, at: &str) -> Vec<Dropped> {
    [decor.prefix(), decor.suffix()]
        .into_iter()
        .flatten()
        .filter_map(|raw| raw.as_str())
        .flat_map(|text| comments_in(text, at))
        .collect()
}

/// A JSON value as a TOML value (strings, booleans, integers, arrays, string maps as inline
/// tables): what a registration holds.
fn json_to_toml(value: &Value) -> Result<toml_edit::Value> {
    Ok(match value {
        Value::String(text) => text.as_str().into(),
        Value::Bool(flag) => (*flag).into(),
        Value::Number(number) => number
            .as_i64()
            .ok_or_else(|| anyhow!("{number} is not an integer"))?
            .into(),
        Value::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(json_to_toml(item)?);
            }
            toml_edit::Value::Array(array)
        }
        Value::Object(object) => {
            let mut table = InlineTable::new();
            for (key, item) in object {
                table.insert(key, json_to_toml(item)?);
            }
            toml_edit::Value::InlineTable(table)
        }
        Value::Null => return Err(anyhow!("TOML has no null")),
    })
}

fn item_to_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(value) => value_to_json(value),
        Item::Table(table) => table_to_json(table),
        Item::ArrayOfTables(tables) => Value::Array(tables.iter().map(table_to_json).collect()),
    }
}

fn table_to_json(table: &Table) -> Value {
    Value::Object(
        table
            .iter()
            .map(|(key, item)| (key.to_owned(), item_to_json(item)))
            .collect::<Map<_, _>>(),
    )
}

fn value_to_json(value: &toml_edit::Value) -> Value {
    match value {
        toml_edit::Value::String(text) => Value::String(text.value().clone()),
        toml_edit::Value::Integer(number) => Value::from(*number.value()),
        toml_edit::Value::Float(number) => Value::from(*number.value()),
        toml_edit::Value::Boolean(flag) => Value::Bool(*flag.value()),
        toml_edit::Value::Datetime(time) => Value::String(time.value().to_string()),
        toml_edit::Value::Array(items) => Value::Array(items.iter().map(value_to_json).collect()),
        toml_edit::Value::InlineTable(table) => Value::Object(
            table
                .iter()
                .map(|(key, value)| (key.to_owned(), value_to_json(value)))
                .collect(),
        ),
    }
}
