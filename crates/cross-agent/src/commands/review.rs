//! `cross-agent review`: a cross review of one session by a model of another family
//! (`review SESSION`), and the kept reviews read back (`review list`, `review show ID`).
//! The work is `cross-agent-review`'s (`run::review`, `record`); this file parses, records and
//! prints. Text a reviewer or a transcript wrote is escaped on its way to the terminal;
//! `--json` prints the report exactly.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use cross_agent_decisions::{DecisionLog, clock, query};
use cross_agent_home::Home;
use cross_agent_protocol::review::{CorrectionRequester, ReviewCorrectionResponse};
use cross_agent_providers::Pool;
use cross_agent_review::correct::{self, Correction};
use cross_agent_review::run::{ReviewOutcome, ReviewReport, ReviewSettings};
use cross_agent_review::{record, review};
use cross_agent_stores::StoreRoots;
use cross_agent_stores::scan;

use crate::display::table::{Column, Plain};
use crate::display::{escape, escape_cell};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ReviewArgs {
    #[command(subcommand)]
    action: Option<ReviewAction>,
    /// The session to review (its id, in any agent's store).
    session: Option<String>,
    /// Ask this provider of the pool (by name) rather than the first of another family.
    #[arg(long, value_name = "NAME")]
    reviewer: Option<String>,
    /// Send the correction into the session, when the escalation guard allows it.
    #[arg(long)]
    send: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum ReviewAction {
    /// The kept reviews, oldest first.
    List(ListArgs),
    /// One kept review: its verdict, task, gaps, correction and reviewer.
    Show(ShowArgs),
    /// The review robot: on or off, steering, what is due and when, the last reviews.
    Status(super::review_status::StatusArgs),
}

#[derive(Debug, Args)]
struct ListArgs {
    /// Only reviews of this session.
    #[arg(long, value_name = "SESSION")]
    session: Option<String>,
    /// Only reviews at or after this: a duration back from now (90m, 24h, 2d) or an RFC 3339
    /// time.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// The reports as one JSON array.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ShowArgs {
    /// The review id (rv_…), as `review list` shows it.
    id: String,
    #[arg(long)]
    json: bool,
}

impl ReviewArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self.action {
            Some(ReviewAction::List(args)) => list(args),
            Some(ReviewAction::Show(args)) => show(args),
            Some(ReviewAction::Status(args)) => args.run(),
            None => {
                let session = self
                    .session
                    .context("name a session: review SESSION [--json], or one of list / show ID")?;
                run_review(&session, self.reviewer, self.send, self.json)
            }
        }
    }
}

/// The home, refused when it is not this user's alone (reviews are kept there).
fn home() -> anyhow::Result<Home> {
    let home = Home::from_env()?;
    home.ensure_root()?;
    Ok(home)
}

fn run_review(
    session: &str,
    reviewer: Option<String>,
    send: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let home = home()?;
    let pool = Pool::from_env(Some(home.root()))?;
    let settings = ReviewSettings {
        cache_file: Some(scan::cache_file(home.root())),
        reviewer,
        ..ReviewSettings::new(StoreRoots::from_env())
    };
    let report = review(session, &pool, &settings)?;
    let kept = record::record(&report, home.root(), &DecisionLog::new(home.root()));
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write_report(&mut out, &report)?;
    }
    out.flush()?;
    if let Err(e) = &kept {
        eprintln!(
            "cross-agent review: the review was not kept, so `review show {}` will not find it: \
             {}",
            report.id,
            escape(&e.to_string())
        );
    }
    if send {
        return send_correction(&report, json);
    }
    Ok(exit_code(&report))
}

/// `--send`: the daemon is asked to send the report's correction past the escalation guard
/// (docs/review.md); the guard's answer is printed — on stderr beside `--json`, whose stdout
/// is the report alone. 0 when it was sent, 1 when there was none to send or the guard refused.
fn send_correction(report: &ReviewReport, json: bool) -> anyhow::Result<ExitCode> {
    let say = |line: &str| {
        if json {
            eprintln!("cross-agent review: {line}");
        } else {
            println!("{line}");
        }
    };
    let Some(correction) = Correction::of_report(report) else {
        say(&format!(
            "no correction to send: the review's outcome is {}{}",
            report.outcome.as_str(),
            if report.verdict.is_some() {
                " without a correction"
            } else {
                ""
            }
        ));
        return Ok(ExitCode::FAILURE);
    };
    let (_home, client) = super::bridge_client::connect()?;
    let answer = correct::request(&client, &correction, CorrectionRequester::Cli)?;
    say(&escape(&correct::describe(&answer)));
    Ok(match answer {
        ReviewCorrectionResponse::Sent { .. } => ExitCode::SUCCESS,
        ReviewCorrectionResponse::Refused { .. } => ExitCode::FAILURE,
    })
}

/// 0 for a verdict; 1 for a review that got none (it is still printed and recorded).
fn exit_code(report: &ReviewReport) -> ExitCode {
    match report.outcome {
        ReviewOutcome::Verdict => ExitCode::SUCCESS,
        ReviewOutcome::Unparseable | ReviewOutcome::ReviewerFailed | ReviewOutcome::NoReviewer => {
            ExitCode::FAILURE
        }
    }
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    home.verify()?;
    let since = args
        .since
        .as_deref()
        .map(|t| query::parse_time(t, clock::now_millis()))
        .transpose()?;
    let (reports, problems) = record::list(home.root())?;
    for problem in &problems {
        eprintln!("cross-agent review list: skipped {}", escape(problem));
    }
    let reports: Vec<ReviewReport> = reports
        .into_iter()
        .filter(|r| args.session.as_ref().is_none_or(|s| &r.session.id == s))
        // Both are canonical stamps, which order as text.
        .filter(|r| since.as_ref().is_none_or(|since| &r.at >= since))
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &reports)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if reports.is_empty() {
        writeln!(out, "no reviews kept{}", filter_text(&args))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = Plain::new(&[
        Column::left("ID"),
        Column::left("AT"),
        Column::left("AGENT"),
        Column::left("SESSION"),
        Column::left("OUTCOME"),
        Column::left("REVIEWER"),
    ]);
    for r in &reports {
        table.row([
            r.id.clone(),
            r.at.clone(),
            r.session.agent.as_str().to_owned(),
            r.session.id.clone(),
            outcome_text(r),
            r.reviewer.as_ref().map_or_else(
                || "-".to_owned(),
                |v| format!("{} ({})", v.provider, v.family),
            ),
        ]);
    }
    table.write(&mut out)?;
    Ok(ExitCode::SUCCESS)
}

fn filter_text(args: &ListArgs) -> String {
    let mut text = String::new();
    if let Some(session) = &args.session {
        text.push_str(&format!(" for session {}", escape_cell(session)));
    }
    if let Some(since) = &args.since {
        text.push_str(&format!(" since {}", escape_cell(since)));
    }
    text
}

fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    home.verify()?;
    let report = record::load(home.root(), &args.id)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write_report(&mut out, &report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `drifting`, or the outcome when there is no verdict.
fn outcome_text(report: &ReviewReport) -> String {
    match report.verdict {
        Some(verdict) => verdict.as_str().to_owned(),
        None => report.outcome.as_str().to_owned(),
    }
}

/// The report for a person: no table, every text escaped.
fn write_report(out: &mut impl Write, r: &ReviewReport) -> std::io::Result<()> {
    writeln!(
        out,
        "review {} of {} session {} ({}{})",
        r.id,
        r.session.agent.product_name(),
        escape_cell(&r.session.id),
        r.session.family,
        r.session
            .model
            .as_deref()
            .map(|m| format!(", {}", escape_cell(m)))
            .unwrap_or_default()
    )?;
    match r.verdict() {
        Some(v) => {
            writeln!(out, "verdict: {}", v.verdict.as_str())?;
            writeln!(out, "task: {}", escape_cell(&v.task))?;
            if v.gaps.is_empty() {
                writeln!(out, "gaps: none")?;
            } else {
                writeln!(out, "gaps:")?;
                for gap in &v.gaps {
                    writeln!(out, "  - {}", escape_cell(gap))?;
                }
            }
            match &v.correction {
                Some(c) => writeln!(out, "correction: {}", escape(c))?,
                None => writeln!(out, "correction: none")?,
            }
        }
        None => {
            writeln!(out, "no verdict: {}", r.outcome.as_str())?;
            if let Some(problem) = &r.problem {
                writeln!(out, "why: {}", escape(problem))?;
            }
        }
    }
    let tokens = match (r.tokens.input, r.tokens.output) {
        (None, None) => String::new(),
        (input, output) => format!(
            ", tokens {} in / {} out",
            input.map_or_else(|| "?".to_owned(), |n| n.to_string()),
            output.map_or_else(|| "?".to_owned(), |n| n.to_string())
        ),
    };
    match &r.reviewer {
        Some(v) => writeln!(
            out,
            "reviewer: {} ({}, {}); {} request(s), {} ms{tokens}",
            escape_cell(&v.provider),
            escape_cell(&v.family),
            escape_cell(&v.model),
            r.requests,
            r.duration_ms
        )?,
        None => writeln!(out, "reviewer: none")?,
    }
    Ok(())
}
