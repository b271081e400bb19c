//! A stand-in for a CLI agent (`claude`, `codex`, `cursor-agent`, `agy`) that a handoff
//! launches: it writes what it was started with — its arguments, its directory, its PATH and
//! the `HANDOFF.md` it was asked to read — as one JSON object to the file `STANDIN_RECORD`
//! names, then exits with `STANDIN_EXIT` (default 0). A launcher test reads the record to see
//! exactly what the receiving agent got.

use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cwd = std::env::current_dir().unwrap_or_default();
    let handoff = std::fs::read_to_string(cwd.join("HANDOFF.md")).ok();
    let record = json!({
        "args": args,
        "cwd": cwd,
        "path": std::env::var("PATH").unwrap_or_default(),
        "handoff_md": handoff,
    });
    if let Some(file) = std::env::var_os("STANDIN_RECORD") {
        // Written whole under a temporary name, then renamed: a test polling for the file never
        // reads half of it.
        let file = std::path::PathBuf::from(file);
        let dir = file.parent().unwrap_or(std::path::Path::new("."));
        if let Ok(mut temp) = tempfile::NamedTempFile::new_in(dir)
            && std::io::Write::write_all(&mut temp, record.to_string().as_bytes()).is_ok()
        {
            let _ = temp.persist(&file);
        }
    }
    let code = std::env::var("STANDIN_EXIT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    std::process::exit(code);
}
