//! The Bot API as the daemon uses it: the few wire types we read, the [`TelegramApi`] trait the
//! poller and the senders are written against, and [`HttpApi`], its client over plain reqwest.
//!
//! Every call is a POST of a JSON body to `{base}/bot{token}/{method}` (core.telegram.org/bots/api
//! "Making requests"); the answer is `{"ok":true,"result":…}` or `{"ok":false,"error_code":…,
//! "description":…,"parameters":{"retry_after":…}}`.

use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::updates::UpdateBatch;

/// The public Bot API.
pub const DEFAULT_BASE: &str = "https://api.telegram.org";

/// The longest message text the Bot API takes, in characters.
pub const MAX_TEXT_CHARS: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: i64,
    #[serde(default)]
    pub is_bot: bool,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub username: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chat {
    pub id: i64,
    #[serde(default, rename = "type")]
    pub kind: String,
    /// A supergroup with topics: one topic per session there.
    #[serde(default)]
    pub is_forum: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub message_id: i64,
    #[serde(default)]
    pub from: Option<User>,
    pub chat: Chat,
    #[serde(default)]
    pub text: Option<String>,
    /// The topic the message is in (forum supergroups).
    #[serde(default)]
    pub message_thread_id: Option<i64>,
    /// The message this one replies to (a card, for a prompt from the phone).
    #[serde(default)]
    pub reply_to_message: Option<Box<Message>>,
    /// A photo, in the sizes Telegram made of it (the largest last).
    #[serde(default)]
    pub photo: Vec<PhotoSize>,
    #[serde(default)]
    pub document: Option<Document>,
    /// The text sent with a photo or a document.
    #[serde(default)]
    pub caption: Option<String>,
}

/// One size of a photo (core.telegram.org/bots/api#photosize).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhotoSize {
    pub file_id: String,
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
    #[serde(default)]
    pub file_size: Option<u64>,
}

/// A file sent as a document (core.telegram.org/bots/api#document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    pub file_id: String,
    #[serde(default)]
    pub file_name: Option<String>,
    #[serde(default)]
    pub file_size: Option<u64>,
}

/// A file ready to download (core.telegram.org/bots/api#file): `file_path` is good for an hour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct File {
    pub file_id: String,
    #[serde(default)]
    pub file_size: Option<u64>,
    #[serde(default)]
    pub file_path: Option<String>,
}

/// A topic of a forum supergroup (core.telegram.org/bots/api#forumtopic).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForumTopic {
    pub message_thread_id: i64,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackQuery {
    pub id: String,
    pub from: User,
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub data: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub callback_query: Option<CallbackQuery>,
}

/// How a message's text is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseMode {
    Html,
    Plain,
}

/// The calls the daemon makes. A trait so the poller's logic does not care how they travel.
pub trait TelegramApi: Send + Sync {
    fn get_me(&self) -> impl Future<Output = Result<User>> + Send;
    fn delete_webhook(&self) -> impl Future<Output = Result<()>> + Send;
    /// Long poll: waits up to `timeout` for updates with ids from `offset` on. Each update is
    /// decoded on its own ([`UpdateBatch`]): one that cannot be read is in the batch's
    /// `skipped`, not an error of the whole call.
    fn get_updates(
        &self,
        offset: i64,
        timeout: Duration,
    ) -> impl Future<Output = Result<UpdateBatch>> + Send;
    fn send_message(
        &self,
        chat_id: i64,
        text: &str,
        mode: ParseMode,
        reply_markup: Option<Value>,
    ) -> impl Future<Output = Result<Message>> + Send;
    fn edit_message_text(
        &self,
        chat_id: i64,
        message_id: i64,
        text: &str,
        mode: ParseMode,
    ) -> impl Future<Output = Result<()>> + Send;
    fn answer_callback_query(
        &self,
        callback_query_id: &str,
        text: Option<&str>,
    ) -> impl Future<Output = Result<()>> + Send;
    fn set_my_commands(&self, commands: &[(&str, &str)])
    -> impl Future<Output = Result<()>> + Send;
    /// `sendMessage` into a topic (`thread` of a forum supergroup), or the chat itself.
    fn send_message_in(
        &self,
        chat_id: i64,
        thread: Option<i64>,
        text: &str,
        mode: ParseMode,
        reply_markup: Option<Value>,
    ) -> impl Future<Output = Result<Message>> + Send;
    fn create_forum_topic(
        &self,
        chat_id: i64,
        name: &str,
    ) -> impl Future<Output = Result<ForumTopic>> + Send;
    fn get_file(&self, file_id: &str) -> impl Future<Output = Result<File>> + Send;
    /// Downloads `file_path` (from [`TelegramApi::get_file`]); more than `max_bytes` is refused
    /// before it is all read.
    fn download_file(
        &self,
        file_path: &str,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Vec<u8>>> + Send;
    /// Sends `bytes` as a file named `file_name`, with an HTML `caption` (at most 1,024
    /// characters) and optional buttons under it.
    fn send_document(
        &self,
        chat_id: i64,
        file_name: &str,
        bytes: Vec<u8>,
        caption: &str,
        reply_markup: Option<Value>,
    ) -> impl Future<Output = Result<Message>> + Send;
}

/// The longest caption of a document, in characters.
pub const MAX_CAPTION_CHARS: usize = 1024;

/// The Bot API over HTTP. Its `Debug` never shows the token.
#[derive(Clone)]
pub struct HttpApi {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for HttpApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpApi")
            .field("base", &self.base)
            .field("token", &"<withheld>")
            .finish()
    }
}

/// The answer envelope every method shares.
#[derive(Deserialize)]
struct Envelope {
    ok: bool,
    #[serde(default)]
    result: Value,
    #[serde(default)]
    error_code: i64,
    #[serde(default)]
    description: String,
    #[serde(default)]
    parameters: Option<ResponseParameters>,
}

#[derive(Deserialize)]
struct ResponseParameters {
    #[serde(default)]
    retry_after: Option<u64>,
}

impl HttpApi {
    /// A client for `token` at `base` (`None`: [`DEFAULT_BASE`]).
    pub fn new(base: Option<&str>, token: &str) -> Result<HttpApi> {
        let token = token.trim();
        if token.is_empty() || token.contains(['\n', '\r', '/', ' ']) {
            return Err(Error::BadToken);
        }
        let base = base
            .map(str::trim)
            .filter(|b| !b.is_empty())
            .unwrap_or(DEFAULT_BASE)
            .trim_end_matches('/')
            .to_owned();
        Ok(HttpApi {
            base,
            token: token.to_owned(),
            http: reqwest::Client::new(),
        })
    }

    /// The client `CROSS_AGENT_TELEGRAM_API` (or the public API) names.
    pub fn from_env(token: &str) -> Result<HttpApi> {
        let base = std::env::var(cross_agent_protocol::settings::TELEGRAM_API).ok();
        HttpApi::new(base.as_deref(), token)
    }

    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        body: Value,
        wait: Duration,
    ) -> Result<T> {
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        // A long poll is held open by the server for its timeout; allow for that plus the trip.
        let response = self
            .http
            .post(url)
            .json(&body)
            .timeout(wait + Duration::from_secs(15))
            .send()
            .await
            .map_err(|source| Error::Network {
                method,
                source: source.without_url(),
            })?;
        let bytes = response.bytes().await.map_err(|source| Error::Network {
            method,
            source: source.without_url(),
        })?;
        decode(method, &bytes)
    }
}

impl HttpApi {
    /// `sendDocument` is the one multipart call (a file cannot travel in JSON).
    async fn call_multipart(
        &self,
        method: &'static str,
        form: reqwest::multipart::Form,
    ) -> Result<Message> {
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        let response = self
            .http
            .post(url)
            .multipart(form)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .map_err(|source| Error::Network {
                method,
                source: source.without_url(),
            })?;
        let bytes = response.bytes().await.map_err(|source| Error::Network {
            method,
            source: source.without_url(),
        })?;
        decode(method, &bytes)
    }
}

/// Reads the answer envelope of `method`.
fn decode<T: serde::de::DeserializeOwned>(method: &'static str, bytes: &[u8]) -> Result<T> {
    let envelope: Envelope =
        serde_json::from_slice(bytes).map_err(|source| Error::Decode { method, source })?;
    if !envelope.ok {
        return Err(Error::Api {
            method,
            code: envelope.error_code,
            description: envelope.description,
            retry_after: envelope.parameters.and_then(|p| p.retry_after),
        });
    }
    serde_json::from_value(envelope.result).map_err(|source| Error::Decode { method, source })
}

fn with_mode(mut body: Value, mode: ParseMode) -> Value {
    if mode == ParseMode::Html {
        body["parse_mode"] = json!("HTML");
    }
    body
}

impl TelegramApi for HttpApi {
    async fn get_me(&self) -> Result<User> {
        self.call("getMe", json!({}), Duration::ZERO).await
    }

    async fn delete_webhook(&self) -> Result<()> {
        let _: Value = self
            .call(
                "deleteWebhook",
                json!({"drop_pending_updates": false}),
                Duration::ZERO,
            )
            .await?;
        Ok(())
    }

    async fn get_updates(&self, offset: i64, timeout: Duration) -> Result<UpdateBatch> {
        let body = json!({
            "offset": offset,
            "timeout": timeout.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        // Raw values first: a list of updates the decoder rejects one of is still a list.
        let entries: Vec<Value> = self.call("getUpdates", body, timeout).await?;
        Ok(UpdateBatch::decode(entries))
    }

    async fn send_message(
        &self,
        chat_id: i64,
        text: &str,
        mode: ParseMode,
        reply_markup: Option<Value>,
    ) -> Result<Message> {
        let mut body = with_mode(json!({"chat_id": chat_id, "text": text}), mode);
        if let Some(markup) = reply_markup {
            body["reply_markup"] = markup;
        }
        self.call("sendMessage", body, Duration::ZERO).await
    }

    async fn edit_message_text(
        &self,
        chat_id: i64,
        message_id: i64,
        text: &str,
        mode: ParseMode,
    ) -> Result<()> {
        let body = with_mode(
            json!({"chat_id": chat_id, "message_id": message_id, "text": text,
                   "reply_markup": {"inline_keyboard": []}}),
            mode,
        );
        let _: Value = self.call("editMessageText", body, Duration::ZERO).await?;
        Ok(())
    }

    async fn answer_callback_query(
        &self,
        callback_query_id: &str,
        text: Option<&str>,
    ) -> Result<()> {
        let mut body = json!({"callback_query_id": callback_query_id});
        if let Some(text) = text {
            body["text"] = json!(text);
        }
        let _: Value = self
            .call("answerCallbackQuery", body, Duration::ZERO)
            .await?;
        Ok(())
    }

    async fn set_my_commands(&self, commands: &[(&str, &str)]) -> Result<()> {
        let commands: Vec<Value> = commands
            .iter()
            .map(|(command, description)| json!({"command": command, "description": description}))
            .collect();
        let _: Value = self
            .call(
                "setMyCommands",
                json!({"commands": commands}),
                Duration::ZERO,
            )
            .await?;
        Ok(())
    }

    async fn send_message_in(
        &self,
        chat_id: i64,
        thread: Option<i64>,
        text: &str,
        mode: ParseMode,
        reply_markup: Option<Value>,
    ) -> Result<Message> {
        let mut body = with_mode(json!({"chat_id": chat_id, "text": text}), mode);
        if let Some(thread) = thread {
            body["message_thread_id"] = json!(thread);
        }
        if let Some(markup) = reply_markup {
            body["reply_markup"] = markup;
        }
        self.call("sendMessage", body, Duration::ZERO).await
    }

    async fn create_forum_topic(&self, chat_id: i64, name: &str) -> Result<ForumTopic> {
        self.call(
            "createForumTopic",
            json!({"chat_id": chat_id, "name": name}),
            Duration::ZERO,
        )
        .await
    }

    async fn get_file(&self, file_id: &str) -> Result<File> {
        self.call("getFile", json!({"file_id": file_id}), Duration::ZERO)
            .await
    }

    async fn download_file(&self, file_path: &str, max_bytes: u64) -> Result<Vec<u8>> {
        const METHOD: &str = "file download";
        // core.telegram.org/bots/api#getfile: `{base}/file/bot{token}/{file_path}`.
        let url = format!("{}/file/bot{}/{file_path}", self.base, self.token);
        let mut response = self
            .http
            .get(url)
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .map_err(|source| Error::Network {
                method: METHOD,
                source: source.without_url(),
            })?;
        if !response.status().is_success() {
            return Err(Error::Api {
                method: METHOD,
                code: i64::from(response.status().as_u16()),
                description: format!("the file download answered {}", response.status()),
                retry_after: None,
            });
        }
        let mut bytes = Vec::new();
        while let Some(piece) = response.chunk().await.map_err(|source| Error::Network {
            method: METHOD,
            source: source.without_url(),
        })? {
            bytes.extend_from_slice(&piece);
            if bytes.len() as u64 > max_bytes {
                return Err(Error::TooLarge { limit: max_bytes });
            }
        }
        Ok(bytes)
    }

    async fn send_document(
        &self,
        chat_id: i64,
        file_name: &str,
        bytes: Vec<u8>,
        caption: &str,
        reply_markup: Option<Value>,
    ) -> Result<Message> {
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(file_name.to_owned())
            .mime_str("text/plain")
            .map_err(|source| Error::Network {
                method: "sendDocument",
                source: source.without_url(),
            })?;
        let mut form = reqwest::multipart::Form::new()
            .text("chat_id", chat_id.to_string())
            .text("caption", caption.to_owned())
            .text("parse_mode", "HTML")
            .part("document", part);
        if let Some(markup) = reply_markup {
            form = form.text("reply_markup", markup.to_string());
        }
        self.call_multipart("sendDocument", form).await
    }
}
