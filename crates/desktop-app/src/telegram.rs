//! The Telegram panel: the bot token (stored exactly as `cross-agent telegram setup` stores it,
//! through the same `cross_agent_telegram::setup_blocking_at`: checked with `getMe`, then written
//! owner-only) and pairing, its one-time code shown large. The token field is a password field;
//! the token is cleared from it once stored and never shown back, logged or put in a message.

use std::path::PathBuf;
use std::sync::Arc;

use cross_agent_telegram::store;

use crate::Settings;
use crate::jobs::Running;

/// What the panel shows of the bot: read from the home's `telegram/` files.
#[derive(Debug, Clone, Default)]
struct BotState {
    set_up: bool,
    username: Option<String>,
    paired: Vec<String>,
}

pub struct TelegramPanel {
    settings: Arc<Settings>,
    token: String,
    code: Option<store::PendingCode>,
    message: Option<Result<String, String>>,
    state: Option<BotState>,
    setup: Running<Result<String, String>>,
}

impl TelegramPanel {
    pub fn new(settings: Arc<Settings>) -> TelegramPanel {
        TelegramPanel {
            settings,
            token: String::new(),
            code: None,
            message: None,
            state: None,
            setup: Running::default(),
        }
    }

    fn home(&self) -> PathBuf {
        self.settings.home.clone()
    }

    fn refresh(&mut self) {
        let home = self.home();
        let set_up = store::read_token(&home).ok().flatten().is_some();
        let status = store::read_status(&home).unwrap_or_default();
        let access = store::read_access(&home).unwrap_or_default();
        self.state = Some(BotState {
            set_up,
            username: status.bot_username,
            paired: access
                .paired
                .iter()
                .map(|p| format!("user {} in chat {} ({})", p.user_id, p.chat_id, p.name))
                .collect(),
        });
    }

    pub fn ui(&mut self, ui: &mut egui::Ui) {
        if let Some(outcome) = self.setup.poll() {
            self.message = Some(outcome);
            self.refresh();
        }
        if self.state.is_none() {
            self.refresh();
        }
        ui.heading("Telegram");
        let state = self.state.clone().unwrap_or_default();
        ui.label(match (&state.set_up, &state.username) {
            (false, _) => "No bot is set up yet.".to_owned(),
            (true, Some(name)) => format!("Bot @{name} is set up."),
            (true, None) => "A bot is set up; the daemon polls it while it runs.".to_owned(),
        });
        ui.add_space(8.0);
        ui.horizontal(|ui| {
            let label = ui.label("Bot token");
            ui.add(
                egui::TextEdit::singleline(&mut self.token)
                    .password(true)
                    .hint_text("from @BotFather")
                    .desired_width(320.0),
            )
            .labelled_by(label.id);
            let ready = !self.token.trim().is_empty() && self.setup.doing().is_none();
            if ui
                .add_enabled(ready, egui::Button::new("Save token"))
                .clicked()
            {
                self.save(ui.ctx());
            }
        });
        self.setup.show(ui);
        ui.add_space(8.0);
        ui.separator();
        ui.label(
            "Pairing: send the code to the bot within 10 minutes to allow your user and chat.",
        );
        if ui
            .add_enabled(state.set_up, egui::Button::new("New pairing code"))
            .clicked()
        {
            match cross_agent_telegram::new_pair_code(&self.home()) {
                Ok(code) => self.code = Some(code),
                Err(error) => self.message = Some(Err(error.to_string())),
            }
        }
        if let Some(code) = &self.code {
            ui.label("Send this to the bot:");
            ui.label(
                egui::RichText::new(format!("/pair {}", code.code))
                    .monospace()
                    .size(40.0)
                    .strong(),
            );
        }
        if ui.button("Refresh").clicked() {
            self.refresh();
        }
        if state.paired.is_empty() {
            ui.label("Paired: nobody yet.");
        }
        for paired in &state.paired {
            ui.label(format!("Paired: {paired}"));
        }
        crate::show_message(ui, self.message.as_ref());
    }

    /// Checks and stores the token off the UI thread; the field is emptied at once, so the
    /// token lives only in the job until it is written.
    fn save(&mut self, ctx: &egui::Context) {
        let token = std::mem::take(&mut self.token).trim().to_owned();
        let home = self.home();
        let base = self.settings.telegram_api.clone();
        self.message = None;
        self.setup
            .start(ctx, "Checking the token with Telegram…", move || {
                cross_agent_telegram::setup_blocking_at(&home, base.as_deref(), &token)
                    .map(|bot| {
                        format!(
                            "Stored. Bot @{} is set up; the daemon polls it while it runs.",
                            bot.username.unwrap_or_default()
                        )
                    })
                    .map_err(|error| format!("The token was not stored: {error}"))
            });
    }
}
