//! `stdio-recorder <program> <args…>`: runs the program with its stdin and stdout passed
//! through, and copies every byte of each into `$CROSS_AGENT_RECORD_DIR/stdin.bin` and
//! `stdout.bin`. Tests put it between a panel shim and the real agent to see exactly what the
//! agent received and sent.

use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result};

fn copy(mut from: impl Read, mut to: impl Write, mut record: File) {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let _ = record.write_all(&chunk[..n]);
        if to.write_all(&chunk[..n]).and_then(|()| to.flush()).is_err() {
            return;
        }
    }
}

fn run() -> Result<ExitCode> {
    let dir = PathBuf::from(
        std::env::var_os("CROSS_AGENT_RECORD_DIR").context("CROSS_AGENT_RECORD_DIR is not set")?,
    );
    let mut args = std::env::args_os().skip(1);
    let program = args
        .next()
        .context("usage: stdio-recorder <program> <args…>")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the program")?;
    let child_stdin = child.stdin.take().context("no stdin pipe")?;
    let child_stdout = child.stdout.take().context("no stdout pipe")?;
    let stdin_record = File::create(dir.join("stdin.bin"))?;
    let stdout_record = File::create(dir.join("stdout.bin"))?;
    std::thread::spawn(move || copy(std::io::stdin(), child_stdin, stdin_record));
    let out = std::thread::spawn(move || copy(child_stdout, std::io::stdout(), stdout_record));
    let status = child.wait()?;
    let _ = out.join();
    Ok(ExitCode::from(
        u8::try_from(status.code().unwrap_or(1) & 0xff).unwrap_or(1),
    ))
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("stdio-recorder: {error:#}");
            ExitCode::FAILURE
        }
    }
}
