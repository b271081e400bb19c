//! The escalation guard (docs/review.md, "Corrections and the escalation guard"): the rules a
//! review's correction must pass before it goes into a session, as pure functions over facts
//! the daemon gathers — so every door (the CLI's `--send`, the Telegram tap, the robot) meets
//! the same check with the daemon's live knowledge, and each rule is tested alone.
//!
//! The rules, in the order they are checked; the first that refuses is the one named:
//!
//! 1. `steering_off` — the robot asks and `review.steer` is off (a person's `--send` or tap
//!    needs no setting);
//! 2. `verdict` — only `drifting`, `off_track` and `blocked` are corrected;
//! 3. `no_correction` — the review gave no correction text;
//! 4. `unknown_session` — no store the daemon reads holds the session;
//! 5. `own_session` — a session does not send a correction to itself;
//! 6. `session_busy` — its last turn has not ended (however recently it ended is fine), or a
//!    bridge delivery to it is queued or under way;
//! 7. `awaiting_approval` — it waits on an approval (panel, Copilot host, Telegram ask);
//! 8. `human_after_review` — a person wrote in it after the part the review read (or that part
//!    could not be read again); `transcript_replaced` — the transcript is shorter than the
//!    part read;
//! 9. `same_correction` — the same correction (SHA-256 of its normalized text) went to it in
//!    the last 24 hours;
//! 10. `daily_limit` — it had `max_corrections_per_day` in the last 24 hours;
//! 11. `cooldown` — its last correction went less than `cooldown_minutes` ago.

use std::time::Duration;

use cross_agent_protocol::review::{CorrectionRequester, GuardRule, ReviewVerdict};
use sha2::{Digest as _, Sha256};

use crate::digest::SinceReview;

/// The window of the day limit and of the same-correction rule.
pub const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// The limits the guard applies (from `config.toml`'s `[review]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub steer: bool,
    pub max_corrections_per_day: u32,
    pub cooldown: Duration,
}

/// A correction sent before to the same session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastCorrection {
    pub sent_ms: i64,
    /// [`correction_hash`] of its text.
    pub hash: String,
}

/// What the daemon found of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFacts {
    /// How the session is named in a refusal: `claude session 058a…`.
    pub label: String,
    /// The request comes from this very session.
    pub is_requester: bool,
    /// Why it is not idle, when it is not.
    pub busy: Option<String>,
    /// The approval it waits on, when it waits on one.
    pub awaiting_approval: Option<String>,
    /// What was written after the reviewed part, or why that could not be read.
    pub since_review: Result<SinceReview, String>,
}

/// Everything the rules look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts<'a> {
    pub requested_by: CorrectionRequester,
    pub verdict: ReviewVerdict,
    pub correction: &'a str,
    /// `None`: no store holds the session.
    pub session: Option<SessionFacts>,
    /// The corrections sent to the session in the last [`DAY`] (older ones are ignored).
    pub history: &'a [PastCorrection],
    pub now_ms: i64,
    pub limits: Limits,
}

/// A refusal: the first rule that refused, and why in words naming the session and values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub rule: GuardRule,
    pub reason: String,
}

fn refused(rule: GuardRule, reason: String) -> Result<(), Refused> {
    Err(Refused { rule, reason })
}

/// The correction's text as compared: whitespace runs made one space, trimmed, lowercased —
/// the same advice re-worded only in spacing or case is the same correction.
pub fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The lowercase hex SHA-256 of the [`normalize`]d correction: what `hub.db` keeps instead of
/// the text.
pub fn correction_hash(text: &str) -> String {
    Sha256::digest(normalize(text).as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn minutes_text(ms: i64) -> String {
    let minutes = ms.max(0) / 60_000;
    if minutes < 1 {
        "less than a minute".to_owned()
    } else {
        format!("{minutes} min")
    }
}

/// Every rule in order: `Ok` when the correction may go, else the first refusal.
pub fn check(facts: &Facts<'_>) -> Result<(), Refused> {
    steering(facts)?;
    verdict(facts)?;
    has_correction(facts)?;
    let session = known_session(facts)?;
    not_itself(session)?;
    idle(session)?;
    no_approval_waiting(session)?;
    nobody_wrote_since(session)?;
    let recent: Vec<&PastCorrection> = facts
        .history
        .iter()
        .filter(|c| facts.now_ms.saturating_sub(c.sent_ms) < millis(DAY))
        .collect();
    not_the_same(facts, session, &recent)?;
    under_the_day_limit(facts, session, &recent)?;
    cooled_down(facts, session, &recent)
}

fn steering(facts: &Facts<'_>) -> Result<(), Refused> {
    if facts.requested_by != CorrectionRequester::Robot || facts.limits.steer {
        return Ok(());
    }
    refused(
        GuardRule::SteeringOff,
        "review steering is off (review.steer in config.toml), so the review robot only \
         records its verdicts; a person can send the correction with `cross-agent review \
         SESSION --send` or the verdict card's Send correction"
            .to_owned(),
    )
}

fn verdict(facts: &Facts<'_>) -> Result<(), Refused> {
    match facts.verdict {
        ReviewVerdict::Drifting | ReviewVerdict::OffTrack | ReviewVerdict::Blocked => Ok(()),
        ReviewVerdict::OnTrack => refused(
            GuardRule::Verdict,
            "the verdict is on_track: a session on track gets no correction (only drifting, \
             off_track and blocked do)"
                .to_owned(),
        ),
    }
}

fn has_correction(facts: &Facts<'_>) -> Result<(), Refused> {
    if !facts.correction.trim().is_empty() {
        return Ok(());
    }
    refused(
        GuardRule::NoCorrection,
        "the review gave no correction to send".to_owned(),
    )
}

fn known_session<'a>(facts: &'a Facts<'_>) -> Result<&'a SessionFacts, Refused> {
    facts.session.as_ref().ok_or_else(|| Refused {
        rule: GuardRule::UnknownSession,
        reason: "no agent store the daemon reads holds this session (`cross-agent sessions` \
                 lists those it sees); nothing was sent"
            .to_owned(),
    })
}

fn not_itself(session: &SessionFacts) -> Result<(), Refused> {
    if !session.is_requester {
        return Ok(());
    }
    refused(
        GuardRule::OwnSession,
        format!(
            "the request comes from {} itself: a session never sends a correction to itself; \
             run the review from a terminal or another session",
            session.label
        ),
    )
}

fn idle(session: &SessionFacts) -> Result<(), Refused> {
    match &session.busy {
        None => Ok(()),
        Some(why) => refused(
            GuardRule::SessionBusy,
            format!(
                "{} is not idle: {why}. A correction goes only into a session whose last turn \
                 has ended; review it again once it is idle",
                session.label
            ),
        ),
    }
}

fn no_approval_waiting(session: &SessionFacts) -> Result<(), Refused> {
    match &session.awaiting_approval {
        None => Ok(()),
        Some(what) => refused(
            GuardRule::AwaitingApproval,
            format!(
                "{} waits on an approval: {what}. Answer it first; a correction must not arrive \
                 while the person is being asked something",
                session.label
            ),
        ),
    }
}

fn nobody_wrote_since(session: &SessionFacts) -> Result<(), Refused> {
    match &session.since_review {
        Ok(SinceReview::Quiet) => Ok(()),
        Ok(SinceReview::HumanMessage { at }) => refused(
            GuardRule::HumanAfterReview,
            format!(
                "a person wrote in {} after the part the review read{}: their newer \
                 instruction comes first. Review it again to judge what they asked",
                session.label,
                at.map(|t| format!(" (at {})", t.to_rfc3339()))
                    .unwrap_or_default()
            ),
        ),
        Ok(SinceReview::Replaced) => refused(
            GuardRule::TranscriptReplaced,
            format!(
                "the transcript of {} is shorter than the part the review read: it was \
                 rewritten, so the review no longer describes it. Review it again",
                session.label
            ),
        ),
        Err(why) => refused(
            GuardRule::HumanAfterReview,
            format!(
                "cannot tell whether a person wrote in {} after the review ({why}), so nothing \
                 was sent",
                session.label
            ),
        ),
    }
}

fn not_the_same(
    facts: &Facts<'_>,
    session: &SessionFacts,
    recent: &[&PastCorrection],
) -> Result<(), Refused> {
    let hash = correction_hash(facts.correction);
    let Some(same) = recent.iter().rev().find(|c| c.hash == hash) else {
        return Ok(());
    };
    refused(
        GuardRule::SameCorrection,
        format!(
            "the same correction went to {} {} ago; one correction is sent once a day at most",
            session.label,
            minutes_text(facts.now_ms.saturating_sub(same.sent_ms))
        ),
    )
}

fn under_the_day_limit(
    facts: &Facts<'_>,
    session: &SessionFacts,
    recent: &[&PastCorrection],
) -> Result<(), Refused> {
    let max = facts.limits.max_corrections_per_day;
    if recent.len() < usize::try_from(max).unwrap_or(usize::MAX) {
        return Ok(());
    }
    let next = recent
        .first()
        .map(|oldest| oldest.sent_ms + millis(DAY) - facts.now_ms);
    refused(
        GuardRule::DailyLimit,
        format!(
            "{} had {} corrections in the last 24 h, the most review.max_corrections_per_day \
             ({max}) allows{}",
            session.label,
            recent.len(),
            next.filter(|_| max > 0)
                .map(|ms| format!("; the next may go in {}", minutes_text(ms)))
                .unwrap_or_default()
        ),
    )
}

fn cooled_down(
    facts: &Facts<'_>,
    session: &SessionFacts,
    recent: &[&PastCorrection],
) -> Result<(), Refused> {
    let cooldown = millis(facts.limits.cooldown);
    let Some(last) = recent.iter().map(|c| c.sent_ms).max() else {
        return Ok(());
    };
    let since = facts.now_ms.saturating_sub(last);
    if since >= cooldown {
        return Ok(());
    }
    refused(
        GuardRule::Cooldown,
        format!(
            "{} had a correction {} ago; review.cooldown_minutes ({}) must pass between two \
             (the next may go in {})",
            session.label,
            minutes_text(since),
            cooldown / 60_000,
            minutes_text(cooldown - since)
        ),
    )
}

#[cfg(test)]
mod tests {
    use cross_agent_stores::UnixMillis;
    use pretty_assertions::assert_eq;

    use super::*;

    const NOW: i64 = 1_800_000_000_000;
    const MIN: i64 = 60_000;

    fn session() -> SessionFacts {
        SessionFacts {
            label: "claude session s1".into(),
            is_requester: false,
            busy: None,
            awaiting_approval: None,
            since_review: Ok(SinceReview::Quiet),
        }
    }

    fn facts<'a>(history: &'a [PastCorrection]) -> Facts<'a> {
        Facts {
            requested_by: CorrectionRequester::Cli,
            verdict: ReviewVerdict::Drifting,
            correction: "Revert Cargo.lock; the person said never to touch it.",
            session: Some(session()),
            history,
            now_ms: NOW,
            limits: Limits {
                steer: false,
                max_corrections_per_day: 3,
                cooldown: Duration::from_secs(30 * 60),
            },
        }
    }

    fn past(minutes_ago: i64, text: &str) -> PastCorrection {
        PastCorrection {
            sent_ms: NOW - minutes_ago * MIN,
            hash: correction_hash(text),
        }
    }

    fn rule(facts: &Facts<'_>) -> Option<GuardRule> {
        check(facts).err().map(|r| r.rule)
    }

    #[test]
    fn an_idle_drifting_session_with_nothing_sent_passes() {
        assert_eq!(check(&facts(&[])), Ok(()));
        for verdict in [ReviewVerdict::OffTrack, ReviewVerdict::Blocked] {
            assert_eq!(
                check(&Facts {
                    verdict,
                    ..facts(&[])
                }),
                Ok(())
            );
        }
    }

    #[test]
    fn the_robot_needs_steering_a_person_does_not() {
        let robot = Facts {
            requested_by: CorrectionRequester::Robot,
            ..facts(&[])
        };
        assert_eq!(rule(&robot), Some(GuardRule::SteeringOff));
        let mut steering = robot.clone();
        steering.limits.steer = true;
        assert_eq!(check(&steering), Ok(()));
        let tap = Facts {
            requested_by: CorrectionRequester::Telegram,
            ..facts(&[])
        };
        assert_eq!(check(&tap), Ok(()));
    }

    #[test]
    fn on_track_is_never_corrected() {
        let on_track = Facts {
            verdict: ReviewVerdict::OnTrack,
            ..facts(&[])
        };
        assert_eq!(rule(&on_track), Some(GuardRule::Verdict));
    }

    #[test]
    fn an_empty_correction_is_refused() {
        let empty = Facts {
            correction: " \n ",
            ..facts(&[])
        };
        assert_eq!(rule(&empty), Some(GuardRule::NoCorrection));
    }

    #[test]
    fn an_unknown_session_is_refused() {
        let unknown = Facts {
            session: None,
            ..facts(&[])
        };
        assert_eq!(rule(&unknown), Some(GuardRule::UnknownSession));
    }

    #[test]
    fn a_session_never_corrects_itself() {
        let mut own = facts(&[]);
        own.session = Some(SessionFacts {
            is_requester: true,
            ..session()
        });
        let refusal = check(&own).unwrap_err();
        assert_eq!(refusal.rule, GuardRule::OwnSession);
        assert!(refusal.reason.contains("claude session s1"), "{refusal:?}");
    }

    #[test]
    fn a_busy_session_is_refused_naming_why() {
        let mut busy = facts(&[]);
        busy.session = Some(SessionFacts {
            busy: Some("its panel (shim pid 7) says a turn is running".into()),
            ..session()
        });
        let refusal = check(&busy).unwrap_err();
        assert_eq!(refusal.rule, GuardRule::SessionBusy);
        assert!(refusal.reason.contains("shim pid 7"), "{refusal:?}");
    }

    #[test]
    fn a_waiting_approval_is_refused() {
        let mut asking = facts(&[]);
        asking.session = Some(SessionFacts {
            awaiting_approval: Some("a Telegram approval ask is open for it".into()),
            ..session()
        });
        assert_eq!(rule(&asking), Some(GuardRule::AwaitingApproval));
    }

    #[test]
    fn a_person_writing_after_the_review_is_refused() {
        let at = Some(UnixMillis(NOW - MIN));
        for (since, expected) in [
            (
                Ok(SinceReview::HumanMessage { at }),
                GuardRule::HumanAfterReview,
            ),
            (Ok(SinceReview::Replaced), GuardRule::TranscriptReplaced),
            // What cannot be checked does not pass.
            (
                Err("permission denied".to_owned()),
                GuardRule::HumanAfterReview,
            ),
        ] {
            let mut wrote = facts(&[]);
            wrote.session = Some(SessionFacts {
                since_review: since,
                ..session()
            });
            assert_eq!(rule(&wrote), Some(expected));
        }
    }

    #[test]
    fn the_same_correction_goes_once_a_day() {
        // Re-spaced and re-cased, it is the same correction.
        let history = [past(
            23 * 60,
            "revert  Cargo.lock;\nthe person said never to touch it.",
        )];
        let refusal = check(&facts(&history)).unwrap_err();
        assert_eq!(refusal.rule, GuardRule::SameCorrection);
        assert!(refusal.reason.contains("1380 min ago"), "{refusal:?}");
        // A day later it may go again.
        let history = [past(
            24 * 60 + 1,
            "revert cargo.lock; the person said never to touch it.",
        )];
        assert_eq!(check(&facts(&history)), Ok(()));
    }

    #[test]
    fn at_most_n_a_day() {
        let history = [past(300, "a"), past(200, "b"), past(100, "c")];
        let refusal = check(&facts(&history)).unwrap_err();
        assert_eq!(refusal.rule, GuardRule::DailyLimit);
        assert!(
            refusal.reason.contains("the next may go in 1140 min"),
            "{refusal:?}"
        );
        let mut more = facts(&history);
        more.limits.max_corrections_per_day = 4;
        assert_eq!(check(&more), Ok(()));
        let mut none = facts(&[]);
        none.limits.max_corrections_per_day = 0;
        assert_eq!(rule(&none), Some(GuardRule::DailyLimit));
    }

    #[test]
    fn a_cooldown_between_two() {
        let history = [past(10, "another correction")];
        let refusal = check(&facts(&history)).unwrap_err();
        assert_eq!(refusal.rule, GuardRule::Cooldown);
        assert!(refusal.reason.contains("10 min ago"), "{refusal:?}");
        assert!(refusal.reason.contains("in 20 min"), "{refusal:?}");
        let history = [past(30, "another correction")];
        assert_eq!(check(&facts(&history)), Ok(()));
    }

    #[test]
    fn the_first_rule_that_refuses_is_named() {
        // Busy, a person wrote, and the same correction went a minute ago: busy comes first.
        let history = [past(
            1,
            "Revert Cargo.lock; the person said never to touch it.",
        )];
        let mut all = facts(&history);
        all.session = Some(SessionFacts {
            busy: Some("a turn is open".into()),
            since_review: Ok(SinceReview::HumanMessage { at: None }),
            ..session()
        });
        assert_eq!(rule(&all), Some(GuardRule::SessionBusy));
        all.session = Some(session());
        assert_eq!(rule(&all), Some(GuardRule::SameCorrection));
    }
}
