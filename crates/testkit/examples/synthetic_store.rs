//! Generates (or finds already there) a synthetic store for the benches, so a big one can be
//! made once and shared: `cargo run -p cross-agent-testkit --example synthetic_store -- DIR
//! [CLAUDE CODEX GROK COPILOT]` writes `DIR/home` and the truth beside it (`DIR/generated.json`),
//! as the benches' `CROSS_AGENT_BENCH_DIR=DIR` expects. Default counts: the benches' five-times
//! store (50,000 + 50,000 + 10,000 sessions, 1,000 Copilot).

use std::path::PathBuf;

use anyhow::{Context, Result};
use cross_agent_testkit::synthetic_stores::{SyntheticSpec, ensure};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .context("usage: synthetic_store DIR [C X G P]")?,
    );
    let counts: Vec<usize> = args
        .map(|a| a.parse().with_context(|| format!("not a count: {a}")))
        .collect::<Result<_>>()?;
    let mut spec = SyntheticSpec::five_times(0);
    if let [claude, codex, grok, rest @ ..] = counts.as_slice() {
        (spec.claude, spec.codex, spec.grok) = (*claude, *codex, *grok);
        if let Some(copilot) = rest.first() {
            spec.copilot = *copilot;
        }
    }
    let (generated, took) = ensure(&dir.join("home"), &spec)?;
    println!(
        "{}: {} files, {:.1} MB, {}",
        dir.join("home").display(),
        generated.files,
        generated.bytes as f64 / 1e6,
        took.map_or_else(
            || "reused".to_owned(),
            |t| format!("generated in {:.0} s", t.as_secs_f64())
        )
    );
    Ok(())
}
