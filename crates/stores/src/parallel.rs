//! The crate's parallel work runs on rayon; this runs it on as many threads as a caller asked
//! for ([`crate::index::RefreshOptions::threads`]), and lends the index's file readers to
//! other crates reading the same files ([`read_files`]).

/// Runs `work` (whose parallel iterators then use that many threads) on `threads` threads: on
/// rayon's global pool when it has that many — the default, so nothing is spawned per call —
/// else on a pool built for the call. A pool that cannot be built leaves the global one.
pub(crate) fn on_threads<R: Send>(threads: usize, work: impl FnOnce() -> R + Send) -> R {
    let threads = threads.max(1);
    if threads == rayon::current_num_threads() {
        return work();
    }
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}

/// The default thread count: rayon's (the cores, or `RAYON_NUM_THREADS`).
pub(crate) fn default_threads() -> usize {
    rayon::current_num_threads()
}

/// Runs `read` over `items` (one file each) as the index reads changed files: each a task of its
/// own on [`crate::index::IO_READERS`] threads when there are many, else on the cores; results
/// in the items' order. For what else reads the same files in the same process (the daemon's
/// usage index), so a cold start reads with the same readers, not on one thread or a pool of
/// its own sizing.
pub fn read_files<T: Send, R: Send>(items: Vec<T>, read: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    let threads = crate::index::discover::io_threads(default_threads(), items.len());
    on_threads(threads, || {
        items.into_par_iter().with_max_len(1).map(read).collect()
    })
}
