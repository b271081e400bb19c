//! Every host's link, kept in step with `hosts.toml`.
//!
//! [`Links::start`] reads the file and runs one [`crate::link::run`] task per host. The file is
//! looked at again every second (its stamp only; read when it changed) and whenever the status
//! is asked for, so `hosts add` followed by `hosts status` already shows the new host: a new
//! host's link starts, a removed one's stops (its ssh child killed and reaped), a changed
//! destination restarts. A file that cannot be read leaves the running links as they are and is
//! reported in the status.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_ipc::Client;
use cross_agent_protocol::hosts::HostsStatusResponse;
use cross_agent_protocol::settings as var;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::file::{self, Host};
use crate::link::{self, LinkConfig, Slot};

/// How often `hosts.toml`'s stamp is looked at.
const FILE_POLL: Duration = Duration::from_secs(1);

/// How long a stop waits for a link's task (its child killed and reaped).
const STOP_WAIT: Duration = Duration::from_secs(3);

/// What [`Links`] needs: where the file is and how links run.
#[derive(Debug, Clone)]
pub struct LinksConfig {
    /// The home's `hosts.toml`.
    pub file: PathBuf,
    /// How each link runs.
    pub link: LinkConfig,
}

impl LinksConfig {
    /// The daemon's: `hosts.toml` in `home`, and the ssh program from `CROSS_AGENT_SSH` (tests)
    /// or `ssh` on `PATH`.
    pub fn for_home(home: &std::path::Path, var: impl Fn(&str) -> Option<String>) -> Self {
        let mut link = LinkConfig::default();
        if let Some(ssh) = var(var::SSH).filter(|v| !v.trim().is_empty()) {
            link.ssh = PathBuf::from(ssh);
        }
        Self {
            file: file::path(home),
            link,
        }
    }
}

struct Running {
    host: Host,
    slot: Arc<Mutex<Slot>>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

struct Inner {
    config: LinksConfig,
    link: Arc<LinkConfig>,
    running: Mutex<BTreeMap<String, Running>>,
    /// The stamp of the file as last read, and what reading it said when it failed.
    seen: Mutex<(Option<file::Stamp>, Option<String>)>,
}

/// The daemon's links, cheap to clone.
#[derive(Clone)]
pub struct Links {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Links")
            .field("file", &self.inner.config.file)
            .field("hosts", &self.inner.running.lock().len())
            .finish()
    }
}

impl Links {
    /// Starts a link per host in the file and keeps them in step with it until `stop` is set,
    /// then stops them all. Must be called inside a tokio runtime.
    pub fn start(config: LinksConfig, mut stop: watch::Receiver<bool>) -> Links {
        let links = Links {
            inner: Arc::new(Inner {
                link: Arc::new(config.link.clone()),
                config,
                running: Mutex::new(BTreeMap::new()),
                seen: Mutex::new((None, None)),
            }),
        };
        links.sync(true);
        let watcher = links.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(FILE_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => watcher.sync(false),
                    _ = stop.wait_for(|stop| *stop) => break,
                }
            }
            watcher.stop_all().await;
        });
        links
    }

    /// Every host's link now, by name.
    pub fn status(&self) -> HostsStatusResponse {
        self.sync(false);
        let hosts = self
            .inner
            .running
            .lock()
            .values()
            .map(|running| running.slot.lock().status.clone())
            .collect();
        HostsStatusResponse {
            hosts,
            file_error: self.inner.seen.lock().1.clone(),
        }
    }

    /// The connected client of host `name`, for a request to be forwarded there; `None` when
    /// there is no such host or its link is not up.
    pub fn client(&self, name: &str) -> Option<Arc<Client>> {
        let running = self.inner.running.lock();
        let slot = running.get(name)?.slot.lock();
        slot.client.clone()
    }

    /// Reads the file if its stamp changed (or `force`), then starts, stops and restarts links
    /// to match it.
    fn sync(&self, force: bool) {
        let stamp = file::stamp(&self.inner.config.file);
        {
            let mut seen = self.inner.seen.lock();
            if !force && seen.0 == stamp {
                return;
            }
            seen.0 = stamp;
        }
        let hosts = match file::read(&self.inner.config.file) {
            Ok(hosts) => {
                self.inner.seen.lock().1 = None;
                hosts
            }
            Err(error) => {
                tracing::warn!(%error, "cannot read the hosts file; the links stay as they are");
                self.inner.seen.lock().1 = Some(error.to_string());
                return;
            }
        };
        let mut running = self.inner.running.lock();
        running.retain(|name, link| {
            let keep = hosts.iter().any(|host| host == &link.host);
            if !keep {
                tracing::info!(host = %name, "link stopped: the host was removed or changed");
                link.stop.send_replace(true);
            }
            keep
        });
        for host in hosts {
            if running.contains_key(&host.name) {
                continue;
            }
            let slot = Arc::new(Mutex::new(Slot::new(&host)));
            let (stop, stop_rx) = watch::channel(false);
            let task = tokio::spawn(link::run(
                host.clone(),
                Arc::clone(&self.inner.link),
                Arc::clone(&slot),
                stop_rx,
            ));
            running.insert(
                host.name.clone(),
                Running {
                    host,
                    slot,
                    stop,
                    task,
                },
            );
        }
    }

    /// Stops every link and waits (a little) for each child to be reaped.
    async fn stop_all(&self) {
        let running = std::mem::take(&mut *self.inner.running.lock());
        for link in running.values() {
            link.stop.send_replace(true);
        }
        for (name, link) in running {
            if tokio::time::timeout(STOP_WAIT, link.task).await.is_err() {
                tracing::warn!(host = %name, "a link did not stop in time");
            }
        }
    }
}
