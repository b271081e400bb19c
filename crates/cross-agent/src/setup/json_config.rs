//! Edits of JSON and JSONC configuration files (`~/.claude.json`, Claude Code's
//! `settings.json`, VS Code's user settings) through a concrete syntax tree (`jsonc-parser`'s
//! CST), so that everything cross-agent does not add keeps its bytes: key order, indentation,
//! comments, trailing commas and the final newline. Removing what was added gives back the
//! original text.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::Value;

use anyhow::{Result, anyhow};

/// One parsed JSON(C) document being edited.
pub struct JsonDoc {
    root: CstRootNode,
}

impl JsonDoc {
    /// Parses `text` (a missing or blank file is an empty object). `name` names the file in
    /// errors.
    pub fn parse(name: &str, text: Option<&str>) -> Result<JsonDoc> {
        let text = text.unwrap_or("");
        let root = CstRootNode::parse(text, &ParseOptions::default())
            .map_err(|error| anyhow!("{name} is not valid JSON: {error}"))?;
        if let Some(value) = root.value()
            && value.as_object().is_none()
        {
            return Err(anyhow!(
                "{name} does not hold a JSON object at the top; cross-agent leaves it alone"
            ));
        }
        Ok(JsonDoc { root })
    }

    pub fn text(&self) -> String {
        self.root.to_string()
    }

    /// The whole document as a value (`{}` when empty).
    pub fn value(&self) -> Value {
        self.root
            .to_serde_value()
            .unwrap_or_else(|| Value::Object(Default::default()))
    }

    fn top(&self) -> CstObject {
        self.root.object_value_or_set()
    }

    /// The object at `path` (keys from the top), created when `create`.
    fn object_at(&self, path: &[&str], create: bool) -> Result<Option<CstObject>> {
        let mut object = match self.root.object_value() {
            Some(object) => object,
            None if create => self.top(),
            None => return Ok(None),
        };
        for (depth, key) in path.iter().enumerate() {
            object = match object.get(key) {
                Some(prop) => prop.object_value().ok_or_else(|| {
                    anyhow!("`{}` is not a JSON object", path[..=depth].join("."))
                })?,
                None if create => object
                    .object_value_or_create(key)
                    .ok_or_else(|| anyhow!("cannot create `{}`", path[..=depth].join(".")))?,
                None => return Ok(None),
            };
        }
        Ok(Some(object))
    }

    /// The array at `path`, created when `create`.
    fn array_at(&self, path: &[&str], create: bool) -> Result<Option<CstArray>> {
        let Some((last, parents)) = path.split_last() else {
            return Ok(None);
        };
        let Some(parent) = self.object_at(parents, create)? else {
            return Ok(None);
        };
        match parent.get(last) {
            Some(prop) => prop
                .array_value()
                .map(Some)
                .ok_or_else(|| anyhow!("`{}` is not a JSON array", path.join("."))),
            None if create => Ok(parent.array_value_or_create(last)),
            None => Ok(None),
        }
    }

    /// Sets `key` in the object at `path` to `value`; nothing changes when it already holds it.
    pub fn set_entry(&self, path: &[&str], key: &str, value: &Value) -> Result<()> {
        let object = self
            .object_at(path, true)?
            .ok_or_else(|| anyhow!("cannot create `{}`", path.join(".")))?;
        match object.get(key) {
            Some(prop) if prop.value().and_then(|v| v.to_serde_value()).as_ref() == Some(value) => {
            }
            Some(prop) => prop.set_value(input(value)),
            None => {
                object.append(key, input(value));
            }
        }
        Ok(())
    }

    /// The value of `key` in the object at `path`.
    pub fn entry(&self, path: &[&str], key: &str) -> Option<Value> {
        let object = self.object_at(path, false).ok()??;
        object.get(key)?.value()?.to_serde_value()
    }

    /// Takes `key` out of the object at `path`, unless `backup` (the file before cross-agent
    /// touched it) already had it: then it is put back as it was.
    pub fn remove_entry(&self, path: &[&str], key: &str, backup: Option<&Value>) -> Result<()> {
        let Some(object) = self.object_at(path, false)? else {
            return Ok(());
        };
        let Some(prop) = object.get(key) else {
            return Ok(());
        };
        match backup
            .and_then(|b| pointer(b, path))
            .and_then(|o| o.get(key))
        {
            Some(original) => self.set_entry(path, key, original)?,
            None => prop.remove(),
        }
        Ok(())
    }

    /// The comments inside the value of `key` in the object at `path` (`// …`, `/* … */`).
    pub fn comments_in_entry(&self, path: &[&str], key: &str) -> Vec<String> {
        let Some(prop) = self
            .object_at(path, false)
            .ok()
            .flatten()
            .and_then(|object| object.get(key))
        else {
            return Vec::new();
        };
        let mut comments = Vec::new();
        for node in prop.children() {
            collect_comments(&node, &mut comments);
        }
        comments
    }

    /// Appends the string `item` to the array at `path` unless it is there.
    pub fn add_to_array(&self, path: &[&str], item: &str) -> Result<()> {
        let array = self
            .array_at(path, true)?
            .ok_or_else(|| anyhow!("cannot create `{}`", path.join(".")))?;
        let present = array
            .elements()
            .iter()
            .any(|element| element.to_serde_value().as_ref().and_then(Value::as_str) == Some(item));
        if !present {
            array.append(CstInputValue::String(item.to_owned()));
        }
        Ok(())
    }

    /// Whether the array at `path` holds the string `item`.
    pub fn array_has(&self, path: &[&str], item: &str) -> bool {
        self.value()
            .pointer(&json_pointer(path))
            .and_then(Value::as_array)
            .is_some_and(|items| items.iter().any(|v| v.as_str() == Some(item)))
    }

    /// Takes the string `item` out of the array at `path`, unless `backup` had it there.
    pub fn remove_from_array(
        &self,
        path: &[&str],
        item: &str,
        backup: Option<&Value>,
    ) -> Result<()> {
        let had = backup
            .and_then(|b| b.pointer(&json_pointer(path)))
            .and_then(Value::as_array)
            .is_some_and(|items| items.iter().any(|v| v.as_str() == Some(item)));
        if had {
            return Ok(());
        }
        let Some(array) = self.array_at(path, false)? else {
            return Ok(());
        };
        for element in array.elements().into_iter().rev() {
            if element.to_serde_value().as_ref().and_then(Value::as_str) == Some(item) {
                element.remove();
            }
        }
        Ok(())
    }

    /// Claude Code hooks: adds one group running `command` to `hooks.<event>` unless a hook
    /// with that command is there already; the person's own groups are left as they are.
    pub fn add_hook(&self, event: &str, matcher: Option<&str>, command: &str) -> Result<()> {
        let path = ["hooks", event];
        let array = self
            .array_at(&path, true)?
            .ok_or_else(|| anyhow!("cannot create `hooks.{event}`"))?;
        let present = array.elements().iter().any(|group| {
            group
                .to_serde_value()
                .as_ref()
                .and_then(|g| g.get("hooks"))
                .and_then(Value::as_array)
                .is_some_and(|hooks| {
                    hooks
                        .iter()
                        .any(|h| h.get("command").and_then(Value::as_str) == Some(command))
                })
        });
        if present {
            return Ok(());
        }
        let mut group = Vec::new();
        if let Some(matcher) = matcher {
            group.push((
                "matcher".to_owned(),
                CstInputValue::String(matcher.to_owned()),
            ));
        }
        group.push((
            "hooks".to_owned(),
            CstInputValue::Array(vec![CstInputValue::Object(vec![
                (
                    "type".to_owned(),
                    CstInputValue::String("command".to_owned()),
                ),
                (
                    "command".to_owned(),
                    CstInputValue::String(command.to_owned()),
                ),
            ])]),
        ));
        array.append(CstInputValue::Object(group));
        Ok(())
    }

    /// Takes out every hook whose command `is_ours` says cross-agent added, under every
    /// event, and a group left with no hook; the person's hooks stay.
    pub fn remove_hooks(&self, is_ours: impl Fn(&str) -> bool) -> Result<()> {
        let Some(hooks) = self.object_at(&["hooks"], false)? else {
            return Ok(());
        };
        for event in hooks.properties() {
            let Some(groups) = event.array_value() else {
                continue;
            };
            for group in groups.elements().into_iter().rev() {
                let Some(group_object) = group.as_object() else {
                    continue;
                };
                let Some(list) = group_object.get("hooks").and_then(|p| p.array_value()) else {
                    continue;
                };
                let mut removed = false;
                for hook in list.elements().into_iter().rev() {
                    let command = hook
                        .to_serde_value()
                        .and_then(|h| h.get("command").and_then(Value::as_str).map(str::to_owned));
                    if command.as_deref().is_some_and(&is_ours) {
                        hook.remove();
                        removed = true;
                    }
                }
                if removed && list.elements().is_empty() {
                    group.remove();
                }
            }
        }
        Ok(())
    }

    /// Removes the objects and arrays along `path` (deepest first) that are now empty and that
    /// `backup` did not have: the containers cross-agent created to hold its entries.
    pub fn prune_created(&self, path: &[&str], backup: Option<&Value>) -> Result<()> {
        for depth in (1..=path.len()).rev() {
            let at = &path[..depth];
            if backup.is_some_and(|b| b.pointer(&json_pointer(at)).is_some()) {
                break;
            }
            let (last, parents) = at.split_last().ok_or_else(|| anyhow!("empty path"))?;
            let Some(parent) = self.object_at(parents, false)? else {
                continue;
            };
            let Some(prop) = parent.get(last) else {
                continue;
            };
            let empty = match prop.value() {
                Some(node) => is_empty_container(&node),
                None => false,
            };
            if !empty {
                break;
            }
            prop.remove();
        }
        Ok(())
    }

    /// Whether the document holds nothing (`{}` or no value at all).
    pub fn is_empty(&self) -> bool {
        self.value()
            .as_object()
            .is_none_or(|object| object.is_empty())
    }
}

/// The comments in `node` and under it, in the order they are written.
fn collect_comments(node: &CstNode, out: &mut Vec<String>) {
    if node.is_comment() {
        out.push(node.to_string());
    }
    for child in node.children() {
        collect_comments(&child, out);
    }
}

fn is_empty_container(node: &CstNode) -> bool {
    match node.to_serde_value() {
        Some(Value::Object(object)) => object.is_empty(),
        Some(Value::Array(array)) => array.is_empty(),
        _ => false,
    }
}

fn json_pointer(path: &[&str]) -> String {
    path.iter()
        .map(|key| format!("/{}", key.replace('~', "~0").replace('/', "~1")))
        .collect()
}

fn pointer<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    value.pointer(&json_pointer(path))
}

/// The order `claude mcp add` writes a server's keys in; other keys follow alphabetically.
const KEY_ORDER: [&str; 4] = ["type", "command", "args", "env"];

/// A value to write. Object keys come in [`KEY_ORDER`], then alphabetically (what a
/// `serde_json` map gives).
pub fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(flag) => CstInputValue::Bool(*flag),
        Value::Number(number) => CstInputValue::Number(number.to_string()),
        Value::String(text) => CstInputValue::String(text.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(object) => {
            let mut entries: Vec<_> = object.iter().collect();
            entries.sort_by_key(|(key, _)| {
                KEY_ORDER
                    .iter()
                    .position(|known| known == key)
                    .unwrap_or(KEY_ORDER.len())
            });
            CstInputValue::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key.clone(), input(value)))
                    .collect(),
            )
        }
    }
}
