//! Shared set-up: a temp user data dir, the scripted model endpoint, a fake host, and the
//! check that no error ever shows the token.

use std::time::Duration;

use cross_agent_agent_host::{ConnectionToken, HostConnection};
use cross_agent_testkit::agent_host::{FakeAgentHost, FakeAgentHostBuilder};
use cross_agent_testkit::{ModelEndpoint, Rule};

pub const CLIENT_ID: &str = "cross-agent-test";
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Bench {
    pub endpoint: ModelEndpoint,
    pub user_data: tempfile::TempDir,
}

impl Bench {
    pub fn new() -> Self {
        let endpoint = ModelEndpoint::start().expect("model endpoint");
        endpoint.push(Rule::on_user_text("ping").reply_text("pong from copilot"));
        Self {
            endpoint,
            user_data: tempfile::tempdir().expect("user data dir"),
        }
    }

    pub fn host(&self) -> FakeAgentHostBuilder {
        FakeAgentHost::builder(self.user_data.path()).model_endpoint(&self.endpoint)
    }
}

pub fn token_of(host: &FakeAgentHost) -> ConnectionToken {
    ConnectionToken::new(host.token())
}

pub async fn connect(host: &FakeAgentHost) -> HostConnection {
    HostConnection::connect(host.socket(), &token_of(host), CLIENT_ID)
        .await
        .expect("connect to the fake host")
}

/// Neither the error's Display nor its Debug shows the token.
pub fn assert_no_token(err: &cross_agent_agent_host::Error, token: &str) {
    let shown = format!("{err} / {err:?}");
    assert!(!shown.contains(token), "the token leaked: {shown}");
}
