//! A photo or document from the phone: downloaded into the session's inbox
//! ([`crate::inbox`]) and sent on as a prompt that names its path.

use std::path::{Path, PathBuf};

use cross_agent_decisions::{Decision, Outcome};
use cross_agent_protocol::timestamp::UnixMillis;

use super::{Desk, Place, SessionRef, kind, say};
use crate::api::{Message, TelegramApi};
use crate::cards;
use crate::error::Error;
use crate::inbox;
use crate::queue::OutboundQueue;
use crate::text::escape_html;

impl Desk {
    /// A photo or a document for `session`: saved in its inbox, then a prompt naming it.
    pub(super) async fn file<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
        message: Message,
    ) {
        let thread = self.thread_for(out, place, &session).await;
        let here = Place { thread, ..place };
        let (file_id, name, declared) = match (&message.document, largest(&message.photo)) {
            (Some(document), _) => (
                document.file_id.clone(),
                document
                    .file_name
                    .clone()
                    .unwrap_or_else(|| "document".to_owned()),
                document.file_size,
            ),
            (None, Some(photo)) => (
                photo.file_id.clone(),
                "photo.jpg".to_owned(),
                photo.file_size,
            ),
            (None, None) => return,
        };
        match self
            .save_file(out, &session, &file_id, &name, declared)
            .await
        {
            Ok((path, size)) => {
                self.record(
                    Decision::new(kind("telegram_file"), Outcome::new("saved"))
                        .session(session.session_id.clone())
                        .agent(session.agent.clone())
                        .detail("chat_id", place.chat)
                        .detail("path", path.to_string_lossy().into_owned())
                        .detail("bytes", size),
                );
                let said = message
                    .caption
                    .as_deref()
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .unwrap_or("I sent you a file from my phone.");
                let prompt = format!(
                    "{said}\n\n(The file is saved at {} — {size} bytes. Read it from there.)",
                    path.display()
                );
                self.prompt(out, here, session, prompt).await;
            }
            Err(reason) => {
                self.record(
                    Decision::new(kind("telegram_file"), Outcome::new("refused"))
                        .session(session.session_id.clone())
                        .agent(session.agent.clone())
                        .detail("chat_id", place.chat)
                        .detail("name", name.clone())
                        .reason(reason.clone()),
                );
                let text = format!(
                    "📎 Not saved for <b>{}</b>: {} (the inbox takes files up to {} MB).",
                    escape_html(&cards::header(&session)),
                    escape_html(&reason),
                    inbox::MAX_FILE_BYTES / (1024 * 1024)
                );
                say(out, here, &text);
            }
        }
    }

    pub(super) async fn save_file<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        session: &SessionRef,
        file_id: &str,
        name: &str,
        declared: Option<u64>,
    ) -> Result<(PathBuf, usize), String> {
        let too_big = |size: u64| {
            format!(
                "it is {size} bytes, more than the {} bytes the inbox takes",
                inbox::MAX_FILE_BYTES
            )
        };
        if let Some(size) = declared.filter(|s| *s > inbox::MAX_FILE_BYTES) {
            return Err(too_big(size));
        }
        // The inbox is a folder of the session's own machine: files do not travel over the
        // link (docs/remote.md, "What travels").
        if let Some(host) = &session.host {
            return Err(format!(
                "the session is on host `{host}`, and files do not travel over the link; send \
                 the text instead"
            ));
        }
        let Some(cwd) = session.cwd.clone() else {
            return Err(
                "the session's directory is not known, so there is no inbox to put it in".into(),
            );
        };
        let file = out
            .api()
            .get_file(file_id)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(size) = file.file_size.filter(|s| *s > inbox::MAX_FILE_BYTES) {
            return Err(too_big(size));
        }
        let Some(path) = file.file_path else {
            return Err("Telegram gave no path to download it from".into());
        };
        let bytes = out
            .api()
            .download_file(&path, inbox::MAX_FILE_BYTES)
            .await
            .map_err(|e| match e {
                Error::TooLarge { .. } => "it is larger than the inbox takes".to_owned(),
                other => other.to_string(),
            })?;
        let size = bytes.len();
        let stamp = UnixMillis::now().0.to_string();
        let name = name.to_owned();
        let saved = tokio::task::spawn_blocking(move || {
            inbox::save(Path::new(&cwd), &stamp, &name, &bytes)
        })
        .await
        .map_err(|e| format!("saving failed: {e}"))?
        .map_err(|e| e.to_string())?;
        Ok((saved, size))
    }
}

/// The largest size of a photo: the most pixels, then the most bytes; of equals, the later
/// (Telegram lists the sizes smallest first).
pub(super) fn largest(sizes: &[crate::api::PhotoSize]) -> Option<&crate::api::PhotoSize> {
    sizes
        .iter()
        .enumerate()
        .max_by_key(|(index, p)| {
            (
                u64::from(p.width) * u64::from(p.height),
                p.file_size.unwrap_or(0),
                *index,
            )
        })
        .map(|(_, p)| p)
}
