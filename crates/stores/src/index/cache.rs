//! The index persisted in one file, `$CROSS_AGENT_HOME/cache/sessions-index.bin`, so a new
//! process starts warm.
//!
//! Why a file of our own rather than SQLite (`hub.db`): the CLI lists sessions without a daemon,
//! and the warm listing budget (100 ms for 22,000 sessions, stat calls included) leaves room for
//! one sequential read and decode, not for 22,000 row look-ups. Why postcard: it decodes the
//! entries about as fast as memory can be copied, and every field it stores is a plain type of
//! this module. The agents' fold states are stored as JSON text inside it, because a fold may use
//! serde attributes a non-self-describing format cannot round-trip.
//!
//! Layout: `MAGIC`, format version (u32 LE), schema fingerprint (u64 LE), payload length (u64
//! LE), payload checksum (u64 LE), then the postcard payload. The fingerprint covers this crate's
//! version and the JSON shape of every fold's default state, so a build whose folds changed starts
//! afresh instead of resuming a state it would misread. A cache that is missing, from another
//! version, or whose checksum or decoding fails is rebuilt: a cache is never worth an error.
//!
//! Written atomically (a temp file in the same folder, then rename), the folder `0700` and the
//! file `0600`: it holds session ids, working directories and titles.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::claude::ClaudeFold;
use crate::codex::CodexFold;
use crate::error::{Result, StoreError};
use crate::grok::GrokFold;
use crate::index::{Entry, SessionIndex, fnv1a};
use crate::model::TranscriptFold;

/// The cache file's name inside `$CROSS_AGENT_HOME/cache/`.
pub const CACHE_FILE_NAME: &str = "sessions-index.bin";

const MAGIC: &[u8; 8] = b"XAGIDX\x00\x01";
/// Bump when the layout or [`Entry`] changes.
const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 8 + 4 + 8 + 8 + 8;

/// The persisted payload.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Body {
    entries: Vec<Entry>,
}

/// What loading found.
#[derive(Debug)]
pub enum CacheLoad {
    /// The index as it was saved.
    Loaded(SessionIndex),
    /// No cache yet: start empty, nothing to report.
    Missing,
    /// A cache from another format or build: start empty, nothing to report.
    Outdated,
    /// A cache that cannot be used (unreadable, truncated, checksum or decode failure): start
    /// empty, and report it as a warning naming the file.
    Corrupt(String),
}

/// Identifies the shape of everything a cache stores, so a cache written by a build with other
/// folds is not resumed.
fn fingerprint() -> u64 {
    let mut shape = String::from(env!("CARGO_PKG_VERSION"));
    for default_state in [
        fold_shape::<ClaudeFold>(),
        fold_shape::<CodexFold>(),
        fold_shape::<GrokFold>(),
    ] {
        shape.push('\n');
        shape.push_str(&default_state);
    }
    fnv1a(shape.as_bytes())
}

fn fold_shape<F: TranscriptFold>() -> String {
    serde_json::to_string(&F::default()).unwrap_or_default()
}

/// A fast checksum over the payload, eight bytes at a time: it only has to catch a torn or
/// damaged file, and it runs on every warm start.
fn checksum(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0x9e37_79b9_7f4a_7c15 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut buf = [0u8; 8];
        buf.copy_from_slice(word);
        hash = (hash ^ u64::from_le_bytes(buf))
            .wrapping_mul(0xff51_afd7_ed55_8ccd)
            .rotate_left(31);
    }
    for &b in words.remainder() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    }
    hash
}

/// Reads the cache at `path`.
pub fn load(path: &Path) -> CacheLoad {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return CacheLoad::Missing,
        Err(e) => return CacheLoad::Corrupt(format!("cannot read the session cache: {e}")),
    };
    decode(&bytes)
}

fn decode(bytes: &[u8]) -> CacheLoad {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return CacheLoad::Corrupt("not a session cache (bad header)".to_owned());
    }
    let u32_at = |at: usize| {
        let mut buf = [0u8; 4];
        buf.copy_from_slice(&bytes[at..at + 4]);
        u32::from_le_bytes(buf)
    };
    let u64_at = |at: usize| {
        let mut buf = [0u8; 8];
        buf.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(buf)
    };
    if u32_at(8) != FORMAT_VERSION || u64_at(12) != fingerprint() {
        return CacheLoad::Outdated;
    }
    let payload = &bytes[HEADER_LEN..];
    if u64_at(20) != payload.len() as u64 {
        return CacheLoad::Corrupt("session cache is truncated".to_owned());
    }
    if u64_at(28) != checksum(payload) {
        return CacheLoad::Corrupt("session cache checksum does not match".to_owned());
    }
    match postcard::from_bytes::<Body>(payload) {
        Ok(body) => CacheLoad::Loaded(SessionIndex {
            entries: body
                .entries
                .into_iter()
                .map(|entry| (entry.path.clone(), entry))
                .collect(),
            dirty: false,
        }),
        Err(e) => CacheLoad::Corrupt(format!("session cache does not decode: {e}")),
    }
}

/// Writes `index` to `path` atomically, creating its folder `0700` and the file `0600`.
pub fn save(path: &Path, index: &SessionIndex) -> Result<()> {
    let mut entries: Vec<&Entry> = index.entries.values().collect();
    // A stable order makes the file reproducible, which keeps tests and debugging simple.
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let payload = postcard::to_stdvec(&BodyRef { entries }).map_err(|e| StoreError::Cache {
        path: path.to_path_buf(),
        message: format!("cannot encode: {e}"),
    })?;
    let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&fingerprint().to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&checksum(&payload).to_le_bytes());
    bytes.extend_from_slice(&payload);

    let dir = path.parent().ok_or_else(|| StoreError::Cache {
        path: path.to_path_buf(),
        message: "has no parent folder".to_owned(),
    })?;
    private_dir(dir)?;
    let tmp = temp_path(path);
    let written = write_private(&tmp, &bytes).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::io(path, e));
    }
    Ok(())
}

/// The same payload as [`Body`], borrowed, so saving does not clone every entry.
#[derive(Serialize)]
struct BodyRef<'a> {
    entries: Vec<&'a Entry>,
}

fn temp_path(path: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp-{}-{nanos}", std::process::id()));
    path.with_file_name(name)
}

/// Creates `dir` (and missing parents) owner-only, and tightens it if it already exists.
pub fn private_dir(dir: &Path) -> Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| StoreError::io(dir, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| StoreError::io(dir, e))?;
    }
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_sees_one_changed_byte() {
        let a = vec![7u8; 1001];
        let mut b = a.clone();
        b[500] = 8;
        assert_ne!(checksum(&a), checksum(&b));
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        assert!(matches!(decode(b"nonsense"), CacheLoad::Corrupt(_)));
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        header.extend_from_slice(&fingerprint().to_le_bytes());
        header.extend_from_slice(&3u64.to_le_bytes());
        header.extend_from_slice(&checksum(b"abc").to_le_bytes());
        header.extend_from_slice(b"abc");
        assert!(matches!(decode(&header), CacheLoad::Corrupt(_)));
    }
}
