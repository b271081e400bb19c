//! Checks on a `send`'s arguments that the engine would otherwise meet only at delivery, long
//! after the caller was told the message was accepted: they refuse the call at once instead,
//! naming what is wrong.

use std::path::Path;

use cross_agent_protocol::bridge::{Refusal, RefusalReason, SendParams};
use serde_json::json;

/// A refusal for a `cwd` that is not an existing directory given by its absolute path; `None`
/// when it is one, or none was given. A relative path is refused: the daemon has no directory
/// of the caller's to take it from.
pub fn refuse_missing_cwd(params: &SendParams) -> Option<Refusal> {
    let given = params.cwd.as_deref().filter(|cwd| !cwd.trim().is_empty())?;
    let path = Path::new(given);
    let problem = if !path.is_absolute() {
        "is not an absolute path".to_owned()
    } else {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => return None,
            Ok(_) => "is not a directory".to_owned(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                "does not exist".to_owned()
            }
            Err(error) => format!("cannot be read ({error})"),
        }
    };
    Some(Refusal {
        reason: RefusalReason::InvalidArguments,
        message: format!(
            "`cwd` {given} {problem}: a send's cwd is where the target session is looked for \
             and where a new one starts, so it must be the absolute path of an existing \
             directory; nothing was sent"
        ),
        candidates: Vec::new(),
        details: json!({"cwd": given}),
    })
}
