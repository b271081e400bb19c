//! The crate's parallel work runs on rayon; this runs it on as many threads as a caller asked
//! for ([`crate::index::RefreshOptions::threads`]).

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
