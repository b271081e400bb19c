//! What the binaries' allocator does with memory it freed: the daemon gives it back to the
//! system at once, the CLI within 10 ms.
//!
//! The daemon runs on mimalloc (the `cross-agent` binary's global allocator). A cold index walk
//! and a usage refresh free most of what they allocate (each file's bytes, its parse, the
//! readers' buffers), and mimalloc gives a freed page back to the system only a delay after it
//! was freed (1 s) and only when the allocator is next called after that delay: a daemon that
//! goes idle after building its index never calls it, so every page freed during the build
//! stays resident. Measured at 22,000 sessions (debug, issue 30): the usage index's refresh
//! held 104 MB resident for 36 MB live, and with no delay 55 MB; the session index's listing
//! 62 MB for 30 MB accounted, and with no delay 51 MB (peak 101 → 62 MB).
//!
//! Giving pages back at once costs an `madvise` per freed page run and a page fault when one
//! is used again: measured at 22,000 sessions, 0.13 s more system time over a 30 s cold walk.
//! When the process runs on another allocator (tests, benches that choose their own) the
//! option only tunes a mimalloc that nothing allocates from.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use libmimalloc_sys::{mi_collect, mi_option_set, mi_option_t};

/// A call that ran at least this long (a cold index build, a usage refresh of many files) has
/// freed far more than it kept: [`run_then_hand_back`] then has the threads that did it give
/// their emptied pages back. A warm listing takes milliseconds and pays nothing.
pub const HEAVY_CALL: Duration = Duration::from_secs(1);

/// How many times [`hand_back_emptied_pages`] ran, for the tests.
static HANDED_BACK: AtomicUsize = AtomicUsize::new(0);

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (the version `libmimalloc-sys` builds
/// by default): the milliseconds between freeing a page and giving it back, 0 for at once. The
/// binding names only the options that kept their number across mimalloc versions, so it is
/// written here; the test below fails if it names another option.
const PURGE_DELAY: mi_option_t = 15;

/// mimalloc's own setting of the delay, read when it starts: one a person set wins.
const PURGE_DELAY_VAR: &str = "MIMALLOC_PURGE_DELAY";

/// Makes the allocator give every page it frees back to the system at once, unless
/// [`PURGE_DELAY_VAR`] says otherwise. Called once, before the daemon builds anything.
pub fn give_back_freed_memory_at_once() {
    if std::env::var_os(PURGE_DELAY_VAR).is_none() {
        set_purge_delay(0);
    }
}

/// The CLI's setting, unless [`PURGE_DELAY_VAR`] says otherwise: freed pages go back 10 ms
/// after the free (mimalloc 2's default) rather than a second after. A cold listing of 111,000
/// sessions without a daemon frees hundreds of MB over its 3.5 s and, with the 1 s delay, held
/// most of it: peak 206–209 MB, 96–120 MB with 10 ms (release, issue 30). A process that lives
/// a few seconds pays fewer `madvise` calls than with no delay at all.
pub fn give_back_freed_memory_soon() {
    if std::env::var_os(PURGE_DELAY_VAR).is_none() {
        set_purge_delay(10);
    }
}

/// Runs `work` and, when it took [`HEAVY_CALL`] or longer, [`hand_back_emptied_pages`].
/// For the daemon's blocking calls and passes, which is where a cold build runs.
pub fn run_then_hand_back<R>(work: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    let out = work();
    if started.elapsed() >= HEAVY_CALL {
        hand_back_emptied_pages();
    }
    out
}

/// This thread and every thread of rayon's global pool (the index's walk and reads) give the
/// pages they emptied back to the system. The purge delay of 0 does not cover these: mimalloc
/// keeps a thread's emptied pages in that thread's own heap for reuse until the thread
/// allocates again or collects, and after a cold build the threads that did it go idle. Measured
/// at 111,000 sessions (release index bench, issue 30): the daemon's resident set after its
/// first listing went from 151–153 MB to 145–147 MB (101 MB of it live blocks); collecting on
/// every other thread of the daemon after that gave back under 1 MB more.
pub fn hand_back_emptied_pages() {
    collect_this_thread();
    collect_on_the_pool();
    HANDED_BACK.fetch_add(1, Ordering::Relaxed);
}

/// Has each thread of rayon's global pool collect once it is free, without waiting for it:
/// the call's answer is sent after [`run_then_hand_back`] returns, and a walk for another
/// request may hold the pool for seconds (`rayon::broadcast` would wait for all of them).
fn collect_on_the_pool() {
    rayon::spawn_broadcast(|_| collect_this_thread());
}

#[allow(unsafe_code)]
fn collect_this_thread() {
    // SAFETY: `mi_collect` only walks and frees the calling thread's own mimalloc heap (and
    // abandoned pages); any thread may call it at any time.
    unsafe { mi_collect(true) };
}

#[allow(unsafe_code)]
fn set_purge_delay(milliseconds: std::ffi::c_long) {
    // The binding is `unsafe` as every foreign function is; no crate wraps mimalloc's options.
    // SAFETY: `mi_option_set` takes any option number and value (mimalloc ignores an unknown
    // one), reads and writes only mimalloc's own option table, and may be called from any
    // thread at any time; an option's new value applies to the frees that follow.
    unsafe { mi_option_set(PURGE_DELAY, milliseconds) };
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use libmimalloc_sys::{mi_free, mi_malloc};

    /// A call as long as a cold build hands the emptied pages back; a warm listing's does not.
    #[test]
    fn a_heavy_call_hands_back_emptied_pages_and_a_quick_one_does_not() {
        let before = super::HANDED_BACK.load(super::Ordering::Relaxed);
        assert_eq!(super::run_then_hand_back(|| 7), 7);
        assert_eq!(super::HANDED_BACK.load(super::Ordering::Relaxed), before);
        super::run_then_hand_back(|| std::thread::sleep(super::HEAVY_CALL));
        assert_eq!(
            super::HANDED_BACK.load(super::Ordering::Relaxed),
            before + 1
        );
    }

    /// Handing back does not wait for rayon's pool: with every pool thread busy (another
    /// request's walk), the call returns at once and the pool collects once it is free.
    #[test]
    fn handing_back_does_not_wait_for_a_busy_pool() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::time::Duration;
        let (entered, released) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let busy = {
            let (entered, released) = (Arc::clone(&entered), Arc::clone(&released));
            std::thread::spawn(move || {
                rayon::broadcast(|_| {
                    entered.fetch_add(1, Ordering::SeqCst);
                    while !released.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                })
            })
        };
        while entered.load(Ordering::SeqCst) < rayon::current_num_threads() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let (done, returned) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            super::collect_on_the_pool();
            let _ = done.send(());
        });
        let waited = returned.recv_timeout(Duration::from_secs(5));
        released.store(true, Ordering::SeqCst);
        busy.join().unwrap();
        assert!(waited.is_ok(), "handing back waited for the busy pool");
    }

    /// This process's resident set (`VmRSS`), in bytes.
    fn resident() -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let kb: usize = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kb << 10
    }

    /// After the call, 128 MB allocated in small blocks (as a file's parse is), written and
    /// freed leaves the resident set as it is freed. Without the call mimalloc keeps it all
    /// resident (its default delay is 1 s, and nothing here calls it again after that).
    /// mimalloc is called directly: this test binary's global allocator is the system's.
    #[test]
    fn memory_freed_goes_back_to_the_system_at_once() {
        super::set_purge_delay(0);
        const BLOCK: usize = 4 << 10;
        const BLOCKS: usize = 32 << 10;
        let blocks: Vec<*mut u8> = (0..BLOCKS)
            .map(|_| {
                // SAFETY: a plain allocation, checked below and freed once.
                let block = unsafe { mi_malloc(BLOCK) }.cast::<u8>();
                assert!(!block.is_null());
                // SAFETY: `block` holds BLOCK bytes; writing them makes them resident.
                unsafe { block.write_bytes(1, BLOCK) };
                block
            })
            .collect();
        let held = resident();
        for block in blocks {
            // SAFETY: allocated above by `mi_malloc`, freed once.
            unsafe { mi_free(block.cast()) };
        }
        let after = resident();
        // Other tests of this binary may allocate meanwhile: a quarter of the 128 MB is room
        // for them.
        assert!(
            held.saturating_sub(after) >= 96 << 20,
            "the resident set went from {} MB to {} MB after 128 MB was freed",
            held >> 20,
            after >> 20
        );
    }
}
