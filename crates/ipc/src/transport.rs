//! The local socket between the thin processes and the daemon: a Unix socket in the home.
//!
//! Everything above this module sees only [`Stream`], [`Listener`], [`connect`] and [`bind`];
//! Windows named pipes would be a sibling implementation of these four names.

use std::io::ErrorKind;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::error::{Error, Result};

/// A connected socket.
pub type Stream = tokio::net::UnixStream;
/// A listening socket.
pub type Listener = tokio::net::UnixListener;

/// The longest socket path the platform's `sockaddr_un` holds, without the trailing NUL.
#[cfg(target_os = "linux")]
pub const MAX_SOCKET_PATH: usize = 107;
/// The longest socket path the platform's `sockaddr_un` holds, without the trailing NUL.
#[cfg(not(target_os = "linux"))]
pub const MAX_SOCKET_PATH: usize = 103;

pub(crate) fn check_length(path: &Path) -> Result<()> {
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(Error::SocketPathTooLong {
            path: path.to_owned(),
            len,
            max: MAX_SOCKET_PATH,
        });
    }
    Ok(())
}

/// Connects to the daemon's socket. A missing socket or one nobody listens on is
/// [`Error::NotRunning`], the signal to start the daemon; anything else (permissions) is an
/// error of its own. Before a byte is written the socket must be this user's: a link, a
/// socket of another user's, or a listener running as another user is
/// [`cross_agent_home::Error::SocketUnsafe`] (docs/spec/cross-agent-mcp.md §7).
pub async fn connect(path: &Path) -> Result<Stream> {
    check_length(path)?;
    if !cross_agent_home::safety::check_socket(path)? {
        return Err(Error::NotRunning {
            socket: path.to_owned(),
        });
    }
    let stream = Stream::connect(path)
        .await
        .map_err(|source| match source.kind() {
            ErrorKind::NotFound | ErrorKind::ConnectionRefused => Error::NotRunning {
                socket: path.to_owned(),
            },
            _ => Error::Connect {
                socket: path.to_owned(),
                source,
            },
        })?;
    let peer = stream.peer_cred().map_err(|source| Error::Connect {
        socket: path.to_owned(),
        source,
    })?;
    cross_agent_home::safety::check_peer(path, peer.uid())?;
    Ok(stream)
}

/// Binds the daemon's socket, first removing a stale one: a socket file left by a daemon that
/// died, which nothing answers on. Call it only while holding the pidfile lock, so the socket
/// being replaced cannot belong to a daemon that is starting at the same moment. A socket that
/// does answer is [`Error::SocketInUse`]; a path that is not a socket is [`Error::NotASocket`].
/// Must be called inside a tokio runtime.
pub fn bind(path: &Path) -> Result<Listener> {
    check_length(path)?;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => {
                    return Err(Error::SocketInUse {
                        socket: path.to_owned(),
                    });
                }
                Err(_) => {
                    tracing::info!(socket = %path.display(), "removing a stale daemon socket");
                    std::fs::remove_file(path).map_err(|e| Error::io("remove", path, e))?;
                }
            }
        }
        Ok(_) => {
            return Err(Error::NotASocket {
                path: path.to_owned(),
            });
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("inspect", path, e)),
    }
    Listener::bind(path).map_err(|e| Error::io("listen on", path, e))
}

/// The socket file's identity (device, inode), so a daemon removes its socket at exit only if
/// the path still is the one it bound, not one a successor has bound since.
pub fn socket_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Binds the daemon's socket *over* a live one, for a successor taking the home during a
/// handover: binds a fresh socket beside it (`daemon.sock.<pid>`), then renames it onto the
/// path in one step. Clients connecting at any moment reach either the old daemon or the new
/// one, never nothing; connections already open to the old one are untouched (they are bound
/// to its socket, not to the path). Call it only while holding the pidfile lock.
/// Must be called inside a tokio runtime.
pub fn bind_replacing(path: &Path) -> Result<Listener> {
    check_length(path)?;
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}", std::process::id()));
    let temp = std::path::PathBuf::from(temp);
    check_length(&temp)?;
    match std::fs::remove_file(&temp) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("remove", &temp, e)),
    }
    let listener = Listener::bind(&temp).map_err(|e| Error::io("listen on", &temp, e))?;
    if let Err(e) = std::fs::rename(&temp, path) {
        let _ = std::fs::remove_file(&temp);
        return Err(Error::io("move into place", path, e));
    }
    Ok(listener)
}
