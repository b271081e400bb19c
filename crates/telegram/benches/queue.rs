//! The outbound queue under a 429 storm (issue "Telegram": 1,000 notifications queued under a
//! 429 storm, none lost, order kept per chat). Against the fake Bot API, 1,000 notifications to
//! 10 chats are queued while the first `STORM` sends are refused with 429 `retry_after: 1`.
//! Printed beside two figures from the same run: the floor (the same 1,000 with no storm) and
//! the peer (a plain `sendMessage` per notification that records a failure and goes on, one chat after another,
//! under the same storm: what a bridge without a queue loses). Figures are printed, never
//! asserted, except that nothing may be lost and no chat's order broken.
//!
//! `CROSS_AGENT_BENCH_STORM` sets the number of 429s (default 100 under `cargo bench`, 10 as a
//! test).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_decisions::DecisionLog;
use cross_agent_telegram::HttpApi;
use cross_agent_telegram::TelegramApi;
use cross_agent_telegram::api::ParseMode;
use cross_agent_telegram::queue::OutboundQueue;
use cross_agent_telegram::secrets::Scrubber;
use cross_agent_telegram::text::escape_html;
use cross_agent_testkit::telegram::{Failure, FakeBotApi};

const TOKEN: &str = "4242:BENCHqueue";
const CHATS: i64 = 10;
const MESSAGES: usize = 1000;

struct Figures {
    elapsed: Duration,
    delivered: usize,
    lost: usize,
    order_kept: bool,
    rate_limited: usize,
}

/// What each chat received: the calls the fake answered `ok`.
fn delivered(fake: &FakeBotApi) -> HashMap<i64, Vec<String>> {
    let mut by_chat: HashMap<i64, Vec<String>> = HashMap::new();
    for call in fake.calls_to("sendMessage") {
        if call.failed_with.is_some() {
            continue;
        }
        let chat = call.body["chat_id"].as_i64().unwrap_or(0);
        let text = call.body["text"].as_str().unwrap_or("").to_owned();
        let list = by_chat.entry(chat).or_default();
        if list.last() != Some(&text) {
            list.push(text);
        }
    }
    by_chat
}

fn texts(n: usize) -> Vec<(i64, String)> {
    (0..n)
        .map(|i| {
            let chat = (i as i64 % CHATS) + 1;
            (chat, format!("notification {i:04} for chat {chat}"))
        })
        .collect()
}

fn judge(fake: &FakeBotApi, elapsed: Duration, rate_limited: usize) -> Figures {
    let got = delivered(fake);
    let mut lost = 0;
    let mut order_kept = true;
    for chat in 1..=CHATS {
        let wanted: Vec<String> = texts(MESSAGES)
            .into_iter()
            .filter(|(c, _)| *c == chat)
            .map(|(_, t)| t)
            .collect();
        let have = got.get(&chat).cloned().unwrap_or_default();
        lost += wanted.iter().filter(|w| !have.contains(w)).count();
        let kept: Vec<&String> = have.iter().filter(|h| wanted.contains(h)).collect();
        let expected: Vec<&String> = wanted.iter().filter(|w| have.contains(w)).collect();
        order_kept &= kept == expected;
    }
    Figures {
        elapsed,
        delivered: MESSAGES - lost,
        lost,
        order_kept,
        rate_limited,
    }
}

async fn queued(storm: usize) -> Result<Figures> {
    let fake = FakeBotApi::start(TOKEN, "bench_bot")?;
    for _ in 0..storm {
        fake.fail_next("sendMessage", Failure::too_many(1));
    }
    let api = HttpApi::new(Some(fake.base_url()), TOKEN)?;
    let queue = OutboundQueue::new(api, DecisionLog::disabled(), Scrubber::default());
    let started = Instant::now();
    for (chat, text) in texts(MESSAGES) {
        queue.text(chat, &text, "bench");
    }
    queue.idle().await;
    let elapsed = started.elapsed();
    Ok(judge(&fake, elapsed, queue.counts().rate_limited as usize))
}

async fn peer(storm: usize) -> Result<Figures> {
    let fake = FakeBotApi::start(TOKEN, "bench_bot")?;
    for _ in 0..storm {
        fake.fail_next("sendMessage", Failure::too_many(1));
    }
    let api = HttpApi::new(Some(fake.base_url()), TOKEN)?;
    let started = Instant::now();
    for (chat, text) in texts(MESSAGES) {
        // What a bridge without a queue does: send, and on a refusal go on to the next.
        let _ = api
            .send_message(chat, &escape_html(&text), ParseMode::Html, None)
            .await;
    }
    let elapsed = started.elapsed();
    Ok(judge(&fake, elapsed, storm))
}

fn print(name: &str, f: &Figures) {
    println!(
        "{name:<34} {:>8.2} s  delivered {:>4}/{MESSAGES}  lost {:>4}  order kept {:<5}  429s {}",
        f.elapsed.as_secs_f64(),
        f.delivered,
        f.lost,
        f.order_kept,
        f.rate_limited
    );
}

fn main() -> Result<()> {
    let full = std::env::args().any(|arg| arg == "--bench");
    let storm: usize = match std::env::var("CROSS_AGENT_BENCH_STORM") {
        Ok(value) => value.parse().context("CROSS_AGENT_BENCH_STORM")?,
        Err(_) if full => 100,
        Err(_) => 10,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        println!("{MESSAGES} notifications to {CHATS} chats; storm = the first {storm} sends refused with 429 retry_after 1 s");
        let ours = queued(storm).await?;
        let floor = queued(0).await?;
        let naive = peer(storm).await?;
        print("ours: queue under the storm", &ours);
        print("floor: queue, no storm", &floor);
        print("peer: plain send, no queue, storm", &naive);
        if ours.lost != 0 || !ours.order_kept {
            bail!("the queue lost {} or broke a chat's order", ours.lost);
        }
        Ok(())
    })
}
