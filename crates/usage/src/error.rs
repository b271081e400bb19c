//! The one error type of the usage crate: every message names the file or value involved and,
//! where there is one, the fix.

use std::path::PathBuf;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the price file {path} is not valid: {message}")]
    BadPrices { path: PathBuf, message: String },
    #[error(
        "refusing the price file {path}: it is a symbolic link; replace it with a regular file (cp --remove-destination \"$(readlink -f {path})\" {path})"
    )]
    PricesIsLink { path: PathBuf },
    #[error(
        "refusing the price file {path}: others can write it (mode {mode:o}); run chmod go-w {path}"
    )]
    PricesWritableByOthers { path: PathBuf, mode: u32 },
    #[error(
        "`{text}` is not a time: give a duration back from now (24h, 7d, 90m) or a date (2026-12-01) or an RFC 3339 time"
    )]
    BadSince { text: String },
    #[error("`{text}` is not a grouping: use session, agent, model, day or cwd")]
    BadGroupBy { text: String },
    #[error("{path}: {problem}. {fix}")]
    Settings {
        path: PathBuf,
        problem: String,
        fix: String,
    },
    /// A call record written to disk could not be read back ([`crate::spill`]): the report
    /// made with it is not whole. The index reads the stores again on its next refresh.
    #[error("{message}; the usage index reads the stores again on the next request")]
    RecordsUnreadable { message: String },
    #[error("the budget state {path} cannot be kept: {problem}")]
    BudgetState { path: PathBuf, problem: String },
}
