//! A listing's floor for the benches that time one through the daemon (`index`, `usage`): its
//! bytes sent by a thread on a Unix socket of their own, one new connection a sample, as the
//! daemon's answer comes (without the request, the frame and the work).

use std::io::Write;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

pub struct SocketFloor {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    server: std::thread::JoinHandle<()>,
}

impl SocketFloor {
    /// Serves `bytes` to `connections` connections, then ends.
    pub fn start(bytes: Vec<u8>, connections: usize) -> SocketFloor {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("floor.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..connections {
                let (mut stream, _) = listener.accept().unwrap();
                stream.write_all(&bytes).unwrap();
            }
        });
        SocketFloor {
            _dir: dir,
            path,
            server,
        }
    }

    /// One connection: connect, read every byte into `sink` (where the timed listing writes
    /// its own, so both pay the same for it).
    pub fn sample(&self, sink: &mut impl Write) -> Duration {
        let at = Instant::now();
        let mut stream = UnixStream::connect(&self.path).unwrap();
        std::io::copy(&mut stream, sink).unwrap();
        at.elapsed()
    }

    pub fn stop(self) {
        self.server.join().unwrap();
    }
}
