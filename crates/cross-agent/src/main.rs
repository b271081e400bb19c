//! The `cross-agent` binary: parses arguments and hands over to [`cross_agent::run`].

use std::process::ExitCode;

/// mimalloc rather than the system's allocator: a cold index walk reads every transcript on 16
/// threads, and glibc keeps what those threads freed in per-thread arenas it never gives back —
/// measured at 111,000 sessions, the daemon's resident set after its first listing is 338 MB
/// with glibc and 204 MB with mimalloc for the same 153 MB the index holds (issue 30).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Before anything is allocated: a cold listing frees hundreds of MB in a few seconds. The
    // daemon, when this process becomes one, gives freed pages back at once instead.
    cross_agent_daemon::memory::give_back_freed_memory_soon();
    cross_agent::run()
}
