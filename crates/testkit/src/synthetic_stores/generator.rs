//! The generator: whole stores of thousands of sessions with a size mix from 2 KB to 50 MB,
//! deterministic for a given seed, so a store generated once can be reused between benchmark
//! runs ([`ensure`]). Copilot's sessions go where VS Code Stable and the Copilot SDK keep them by
//! default under the home folder (`.config/Code`, `.copilot/session-state`), so the default
//! places find them with no variable set.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::builders::{ClaudeTranscript, CodexRollout, GrokSession};
use super::copilot::{CopilotEditor, SdkEvents};
use super::{Millis, js, now_millis, rfc3339};

/// Changes whenever [`generate`] writes something different for the same spec, so a store kept
/// on disk between benchmark runs is regenerated rather than reused stale.
pub const GENERATOR_VERSION: u32 = 5;

/// What to generate.
#[derive(Debug, Clone)]
pub struct SyntheticSpec {
    pub claude: usize,
    pub codex: usize,
    pub grok: usize,
    /// Copilot sessions: one catalog row, one `session.db` and one SDK `events.jsonl` each.
    pub copilot: usize,
    pub seed: u64,
    /// Multiplies every session's target size (1.0: the 2 KB – 50 MB mix, about 45 KB a
    /// session on average, so 22,000 sessions are about 1 GB).
    pub size_scale: f64,
    /// "Now" for the generated timestamps: sessions spread over the 60 days before it, a few
    /// within the last hours.
    pub now: Millis,
}

impl SyntheticSpec {
    /// The benchmark store: 10,000 Claude + 10,000 Codex + 2,000 Grok sessions, and 1,000
    /// Copilot sessions beside them (issue 25's figure).
    pub fn full(now: Millis) -> Self {
        SyntheticSpec {
            claude: 10_000,
            codex: 10_000,
            grok: 2_000,
            copilot: 1_000,
            seed: 0x5e55_1085,
            size_scale: 1.0,
            now,
        }
    }

    /// Five times the benchmark store's transcripts (issue 30's shape: 50,000 Claude + 50,000
    /// Codex + 10,000 Grok sessions, about 5 GB; a year of a heavy user's sessions), with the
    /// same 1,000 Copilot sessions.
    pub fn five_times(now: Millis) -> Self {
        SyntheticSpec {
            claude: 50_000,
            codex: 50_000,
            grok: 10_000,
            ..SyntheticSpec::full(now)
        }
    }
}

/// A session the generator gave a unique name, for lookups to aim at.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NamedSession {
    pub agent: String,
    pub session_id: String,
    pub name: String,
    /// The transcript (Claude, Codex), session folder (Grok) or `session.db` (Copilot).
    pub path: PathBuf,
    pub size: u64,
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Generated {
    pub files: usize,
    pub bytes: u64,
    /// Sessions with a unique assigned name (their last one), one per agent at least.
    pub named: Vec<NamedSession>,
    /// The largest Claude transcript: where the benchmark appends.
    pub largest_claude: Option<PathBuf>,
}

/// The models a generated Codex thread runs: priced ones and one the table does not know.
const CODEX_MODELS: [&str; 3] = ["gpt-5-codex", "gpt-5", "gpt-5-experimental-unpriced"];

/// A small, fast, deterministic generator (SplitMix64): no dependency, same store for a seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn uuid(&mut self) -> String {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        bytes[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        // Version 4, RFC 4122 variant, like the ids the agents mint.
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .to_string()
    }
}

/// Opening prompts: few, so generated titles repeat across sessions as real ones do.
const PROMPTS: &[&str] = &[
    "fix the failing tests in the billing module",
    "review this pull request for race conditions",
    "add a retry with backoff to the http client",
    "why does the build fail on CI but not locally",
    "refactor the session store into its own crate",
    "write a migration that adds an index on user_id",
    "explain what this function does",
    "update the README with the new install steps",
    "profile the listing and make it faster",
    "port the parser to the new grammar",
    "help me debug a deadlock in the worker pool",
    "summarise the last week of commits",
];

const COMMANDS: &[&str] = &[
    "cargo test --workspace",
    "git status --short",
    "rg -n \"fn main\" src",
    "ls -la crates",
    "cat Cargo.toml",
    "npm run build",
];

/// Filler text for tool output and replies: ASCII, JSON-safe after escaping, cut to length.
fn filler(rng: &mut Rng, len: usize) -> String {
    const WORDS: &[&str] = &[
        "alpha",
        "beta",
        "gamma",
        "delta",
        "session",
        "index",
        "offset",
        "error:",
        "warning",
        "passed",
        "failed",
        "test",
        "crate",
        "module",
        "fn",
        "struct",
        "impl",
        "let",
        "match",
        "return",
        "Ok(())",
        "path/to/file.rs:42:7",
        "{\"k\":1}",
        "tab\there",
        "line\nbreak",
    ];
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        out.push(' ');
    }
    out.truncate(len);
    out
}

/// A target size in bytes from the benchmark's mix (2 KB to 50 MB): mostly small transcripts, a
/// long tail of big ones, about 45 KB on average (so 22,000 sessions make about 1 GB).
fn target_size(rng: &mut Rng, scale: f64) -> u64 {
    let tier = rng.below(10_000);
    let (lo, hi): (f64, f64) = match tier {
        // 80 %: 2–12 KB, a few turns.
        0..=7_999 => (2e3, 12e3),
        // 17 %: 12–200 KB.
        8_000..=9_699 => (12e3, 200e3),
        // 2.95 %: 200 KB – 2 MB.
        9_700..=9_994 => (200e3, 2e6),
        // 0.05 %: 10–50 MB, the long sessions that dominate a real store's bytes.
        _ => (10e6, 50e6),
    };
    // Log-uniform within the tier.
    let size = (lo.ln() + rng.unit() * (hi.ln() - lo.ln())).exp() * scale;
    size.max(600.0) as u64
}

/// The length of one tool output: usually a short log, now and then (in sessions big enough to
/// hold one) a long line — a file dump or a build log — of up to a tenth of the session.
fn tool_output_len(rng: &mut Rng, target: u64) -> usize {
    if target >= 200_000 && rng.below(200) == 0 {
        (rng.below(target / 10) + 20_000) as usize
    } else {
        (rng.below(1_200) + 80) as usize
    }
}

fn cwd_for(rng: &mut Rng) -> String {
    let project = rng.below(400);
    match rng.below(10) {
        0 => "/home/dev".to_owned(),
        1 => format!("/home/dev/work/project-{project:03}/crates/core"),
        _ => format!("/home/dev/work/project-{project:03}"),
    }
}

/// When a session was last active: most within 60 days, a few within the active window.
fn last_active(rng: &mut Rng, now: Millis) -> Millis {
    const HOUR: i64 = 3_600_000;
    if rng.below(50) == 0 {
        now - rng.below(3 * HOUR as u64) as i64
    } else {
        now - rng.below(60 * 24 * HOUR as u64) as i64
    }
}

/// Writes a whole synthetic store under `home` (`.claude`, `.codex`, `.grok`, and Copilot's
/// `.config/Code` and `.copilot`).
pub fn generate(home: &Path, spec: &SyntheticSpec) -> Result<Generated> {
    let mut out = Generated::default();
    let mut rng = Rng::new(spec.seed);
    let mut largest: u64 = 0;
    for i in 0..spec.claude {
        let (path, size, named) = generate_claude(home, &mut rng, i, spec)?;
        if size > largest {
            largest = size;
            out.largest_claude = Some(path);
        }
        out.files += 1;
        out.bytes += size;
        out.named.extend(named);
    }
    let mut index = BufWriter::new(Vec::new());
    for i in 0..spec.codex {
        let (size, named) = generate_codex(home, &mut rng, i, spec, &mut index)?;
        out.files += 1;
        out.bytes += size;
        out.named.extend(named);
    }
    let index = index
        .into_inner()
        .context("buffering session_index.jsonl")?;
    if !index.is_empty() {
        let path = home.join(".codex/session_index.jsonl");
        fs::write(&path, &index).with_context(|| path.display().to_string())?;
        out.files += 1;
        out.bytes += index.len() as u64;
    }
    for i in 0..spec.grok {
        let (size, named) = generate_grok(home, &mut rng, i, spec)?;
        out.files += 2;
        out.bytes += size;
        out.named.extend(named);
    }
    generate_copilot(home, &mut rng, spec, &mut out)?;
    Ok(out)
}

/// The store of `spec` in `home`, generated unless a complete one for the same spec is there
/// already (the benchmarks share one). What [`generate`] reported is kept beside it
/// (`generated.json`) as the truth a listing is checked against; the duration is `None` when
/// the store was reused. "Now" is fixed at generation, so a reused store keeps its shape.
pub fn ensure(
    home: &Path,
    spec: &SyntheticSpec,
) -> Result<(Generated, Option<std::time::Duration>)> {
    let marker = home.with_file_name("generated.txt");
    let truth = home.with_file_name("generated.json");
    let key = format!(
        "v{GENERATOR_VERSION} {} {} {} {} {} {}",
        spec.claude, spec.codex, spec.grok, spec.copilot, spec.size_scale, spec.seed
    );
    if let Ok(text) = fs::read_to_string(&marker)
        && let Some((stored_key, _generated_at)) = text.trim().rsplit_once(' ')
        && stored_key == key
        && let Ok(json) = fs::read(&truth)
        && let Ok(generated) = serde_json::from_slice::<Generated>(&json)
    {
        return Ok((generated, None));
    }
    if home.exists() {
        fs::remove_dir_all(home).with_context(|| home.display().to_string())?;
    }
    let now = now_millis();
    let spec = SyntheticSpec {
        now,
        ..spec.clone()
    };
    let started = std::time::Instant::now();
    let generated = generate(home, &spec)?;
    let took = started.elapsed();
    fs::write(&truth, serde_json::to_vec(&generated)?)
        .with_context(|| truth.display().to_string())?;
    fs::write(&marker, format!("{key} {now}\n")).with_context(|| marker.display().to_string())?;
    Ok((generated, Some(took)))
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    let file = File::create(path).with_context(|| path.display().to_string())?;
    Ok(BufWriter::with_capacity(256 << 10, file))
}

/// One Claude transcript of about its target size, with turns of tool calls and a
/// `custom-title` (sometimes two) sprinkled at a random turn.
fn generate_claude(
    home: &Path,
    rng: &mut Rng,
    i: usize,
    spec: &SyntheticSpec,
) -> Result<(PathBuf, u64, Option<NamedSession>)> {
    let id = rng.uuid();
    let cwd = cwd_for(rng);
    let target = target_size(rng, spec.size_scale);
    let end = last_active(rng, spec.now);
    let mut t = ClaudeTranscript::new(home, &cwd, &id);
    let path = t.path.clone();
    let mut w = create(&path)?;
    let prompt = PROMPTS[rng.below(PROMPTS.len() as u64) as usize];
    // A third of the sessions are named; a tenth of those renamed once more later on.
    let name = (rng.below(3) == 0).then(|| format!("claude-{i:05}"));
    let renamed = name.is_some() && rng.below(10) == 0;
    let name_at = rng.unit();
    let mut written: u64 = 0;
    let mut turn = 0u64;
    let mut named_done = false;
    let mut renamed_done = false;
    // Each turn is ~1.5–3 KB on average; timestamps step backwards from `end`.
    let turns_estimate = (target / 2_000).max(1);
    let step = (3_600_000 / turns_estimate.max(1)).max(1) as i64;
    let start = end - step * turns_estimate as i64;
    while written < target {
        let at = start + step * turn as i64;
        let mut lines = Vec::new();
        t.lines.clear();
        let text = if turn == 0 {
            prompt.to_owned()
        } else {
            format!("next step {turn}: {}", filler(rng, 60))
        };
        t.user(&text, at);
        let tools = rng.below(3);
        for _ in 0..tools {
            let command = COMMANDS[rng.below(COMMANDS.len() as u64) as usize];
            t.tool_use(command, at + 1);
            // Now and then a big tool output line (a long log, a file dump).
            let out_len = tool_output_len(rng, target);
            let output = filler(rng, out_len);
            t.tool_result(&output, at + 2);
        }
        let len = (rng.below(600) + 40) as usize;
        let reply = filler(rng, len);
        t.assistant_text(&reply, at + 3);
        if let Some(name) = &name {
            let progress = written as f64 / target.max(1) as f64;
            if !named_done && progress >= name_at * 0.9 {
                if renamed {
                    t.custom_title(&format!("{name}-old"));
                } else {
                    t.custom_title(name);
                }
                named_done = true;
            } else if renamed && named_done && !renamed_done && progress >= 0.95 {
                t.custom_title(name);
                renamed_done = true;
            }
        }
        if turn == 1 && rng.below(2) == 0 {
            t.ai_title(&format!("{prompt} (summary)"));
        }
        lines.append(&mut t.lines);
        for line in &lines {
            w.write_all(line.as_bytes())?;
            w.write_all(b"\n")?;
            written += line.len() as u64 + 1;
        }
        turn += 1;
    }
    // A name not placed yet (a one-turn file) goes at the end.
    let mut tail = Vec::new();
    if let Some(name) = &name
        && (!named_done || (renamed && !renamed_done))
    {
        t.lines.clear();
        t.custom_title(name);
        tail.append(&mut t.lines);
    }
    for line in &tail {
        w.write_all(line.as_bytes())?;
        w.write_all(b"\n")?;
        written += line.len() as u64 + 1;
    }
    w.flush().with_context(|| path.display().to_string())?;
    let named = name.map(|name| NamedSession {
        agent: "claude".to_owned(),
        session_id: id,
        name,
        path: path.clone(),
        size: written,
    });
    Ok((path, written, named))
}

fn generate_codex(
    home: &Path,
    rng: &mut Rng,
    i: usize,
    spec: &SyntheticSpec,
    names: &mut impl Write,
) -> Result<(u64, Option<NamedSession>)> {
    let id = rng.uuid();
    let cwd = cwd_for(rng);
    let target = target_size(rng, spec.size_scale);
    let end = last_active(rng, spec.now);
    let turns_estimate = (target / 2_000).max(1);
    let step = (3_600_000 / turns_estimate.max(1)).max(1) as i64;
    let start = end - step * turns_estimate as i64;
    let mut r = CodexRollout::new(home, &cwd, &id, start);
    let path = r.path.clone();
    let mut w = create(&path)?;
    let mut written: u64 = 0;
    let prompt = PROMPTS[rng.below(PROMPTS.len() as u64) as usize];
    let mut turn = 0u64;
    // Each turn is one model call with its usage (`token_count`), so `usage` has work to do.
    let model = CODEX_MODELS[rng.below(CODEX_MODELS.len() as u64) as usize];
    let mut total = (0u64, 0u64, 0u64);
    while written < target {
        let at = start + step * turn as i64;
        let text = if turn == 0 {
            prompt.to_owned()
        } else {
            format!("continue with step {turn}")
        };
        if turn == 0 {
            r.model(model, at);
        }
        r.user(&text, at);
        for _ in 0..rng.below(3) {
            let command = COMMANDS[rng.below(COMMANDS.len() as u64) as usize];
            let out_len = tool_output_len(rng, target);
            let output = filler(rng, out_len);
            r.tool_call(command, &output, at + 1);
        }
        let len = (rng.below(600) + 40) as usize;
        let reply = filler(rng, len);
        r.answer(&reply, at + 2);
        let input = 2_000 + rng.below(20_000);
        let last = (input, input / 2, 50 + rng.below(800));
        total = (total.0 + last.0, total.1 + last.1, total.2 + last.2);
        r.token_count(at + 2, last, total);
        for line in r.lines.drain(..) {
            w.write_all(line.as_bytes())?;
            w.write_all(b"\n")?;
            written += line.len() as u64 + 1;
        }
        turn += 1;
    }
    w.flush().with_context(|| path.display().to_string())?;
    // A third of the threads are named in session_index.jsonl, some renamed (newest wins).
    let named = if rng.below(3) == 0 {
        let name = format!("codex-{i:05}");
        if rng.below(10) == 0 {
            writeln!(
                names,
                "{{\"id\":{},\"thread_name\":{},\"updated_at\":\"{}\"}}",
                js(&id),
                js(&format!("{name}-old")),
                rfc3339(end - 1000)
            )?;
        }
        writeln!(
            names,
            "{{\"id\":{},\"thread_name\":{},\"updated_at\":\"{}\"}}",
            js(&id),
            js(&name),
            rfc3339(end)
        )?;
        Some(NamedSession {
            agent: "codex".to_owned(),
            session_id: id,
            name,
            path,
            size: written,
        })
    } else {
        None
    };
    Ok((written, named))
}

fn generate_grok(
    home: &Path,
    rng: &mut Rng,
    i: usize,
    spec: &SyntheticSpec,
) -> Result<(u64, Option<NamedSession>)> {
    let id = rng.uuid();
    let cwd = cwd_for(rng);
    // Grok writes every streamed chunk as a line; sessions are smaller on average.
    let target = target_size(rng, spec.size_scale * 0.5);
    let end = last_active(rng, spec.now);
    let turns_estimate = (target / 2_000).max(1);
    let step = (3_600_000 / turns_estimate.max(1)).max(1) as i64;
    let start = end - step * turns_estimate as i64;
    let mut s = GrokSession::new(home, &cwd, &id, start);
    let prompt = PROMPTS[rng.below(PROMPTS.len() as u64) as usize];
    let mut written: u64 = 0;
    let updates = s.dir.join("updates.jsonl");
    let mut w = create(&updates)?;
    let mut turn = 0u64;
    while written < target {
        let at = start + step * turn as i64;
        let text = if turn == 0 {
            prompt.to_owned()
        } else {
            format!("go on with part {turn}")
        };
        s.user(&text, at);
        for _ in 0..rng.below(3) {
            let len = (rng.below(1_200) + 80) as usize;
            let output = filler(rng, len);
            s.tool_call("Run shell command", &output, at + 1);
        }
        for _ in 0..(rng.below(6) + 2) {
            let len = (rng.below(80) + 8) as usize;
            let chunk = filler(rng, len);
            s.agent_chunk(&chunk, at + 2);
        }
        s.turn_completed(at + 3);
        for line in s.lines.drain(..) {
            w.write_all(line.as_bytes())?;
            w.write_all(b"\n")?;
            written += line.len() as u64 + 1;
        }
        turn += 1;
    }
    w.flush().with_context(|| updates.display().to_string())?;
    let name = (rng.below(3) == 0).then(|| format!("grok-{i:05}"));
    match &name {
        Some(name) => {
            s.rename(name);
        }
        None => s.generated_title = Some(format!("{prompt} (grok)")),
    }
    let summary = s.summary_json();
    let summary_path = s.dir.join("summary.json");
    fs::write(&summary_path, &summary).with_context(|| summary_path.display().to_string())?;
    written += summary.len() as u64;
    let named = name.map(|name| NamedSession {
        agent: "grok".to_owned(),
        session_id: id,
        name,
        path: s.dir.clone(),
        size: written,
    });
    Ok((written, named))
}

/// `spec.copilot` sessions as VS Code's Agent Host and the Copilot SDK write them
/// (`docs/observed/copilot.md` §4): a row each in `agent-host.db`, a `session.db` each with the
/// working directory, the default chat's SDK session and, for a third, a `customTitle`, and the
/// SDK's `events.jsonl` of a few turns (smaller than the other agents' transcripts: the listing
/// reads only its tail).
fn generate_copilot(
    home: &Path,
    rng: &mut Rng,
    spec: &SyntheticSpec,
    out: &mut Generated,
) -> Result<()> {
    if spec.copilot == 0 {
        return Ok(());
    }
    let editor = CopilotEditor::new(&home.join(".config/Code"));
    let sdk_dir = home.join(".copilot/session-state");
    let mut catalog = editor.create_host_db()?;
    let rows = catalog.transaction()?;
    for i in 0..spec.copilot {
        let id = rng.uuid();
        let sdk_id = rng.uuid();
        let cwd = cwd_for(rng);
        let target = target_size(rng, spec.size_scale * 0.25);
        let end = last_active(rng, spec.now);
        let turns_estimate = (target / 1_000).max(1);
        let step = (3_600_000 / turns_estimate).max(1) as i64;
        let start = end - step * turns_estimate as i64;
        rows.execute(
            "INSERT INTO sessions (session_uri, provider, start_time, modified_time) \
             VALUES (?1, 'copilotcli', ?2, ?3)",
            rusqlite::params![format!("copilotcli:/{id}"), start, end],
        )?;

        let db = editor.session(&id)?;
        db.conn.execute_batch("BEGIN")?;
        db.working_directory(&cwd)?
            .default_chat(&sdk_id, "gpt-5-mini")?;
        let name = (rng.below(3) == 0).then(|| format!("copilot-{i:05}"));
        if let Some(name) = &name {
            db.title(name)?;
        }
        db.conn.execute_batch("COMMIT")?;
        let db_path = db.path.clone();
        drop(db);

        let prompt = PROMPTS[rng.below(PROMPTS.len() as u64) as usize];
        let mut events = SdkEvents::new(&sdk_dir, &sdk_id);
        let mut turn = 0u64;
        let mut written = 0u64;
        while written < target {
            let at = start + step * turn as i64;
            let text = if turn == 0 {
                prompt.to_owned()
            } else {
                format!("and now step {turn}")
            };
            let len = (rng.below(600) + 40) as usize;
            let reply = filler(rng, len);
            events
                .user_message(&text, at)
                .turn_start(at)
                .assistant("running it", Some("bash"), at + 1)
                .tool_start("bash", at + 1)
                .assistant(&reply, None, at + 2)
                .turn_end(at + 2);
            // Each turn's six events are about 1.3 KB of envelope and text.
            written += 1_300 + len as u64;
            turn += 1;
        }
        events.write()?;
        let size = fs::metadata(&events.path)
            .with_context(|| events.path.display().to_string())?
            .len()
            + fs::metadata(&db_path)
                .with_context(|| db_path.display().to_string())?
                .len();
        out.files += 2;
        out.bytes += size;
        out.named.extend(name.map(|name| NamedSession {
            agent: "copilot".to_owned(),
            session_id: id,
            name,
            path: db_path,
            size,
        }));
    }
    rows.commit()?;
    drop(catalog);
    let host_db = editor.host_db();
    out.files += 1;
    out.bytes += fs::metadata(&host_db)
        .with_context(|| host_db.display().to_string())?
        .len();
    Ok(())
}
