//! The Agent Host watcher: one connection to every running Copilot host in VS Code, kept for
//! as long as the host runs, so that the daemon's listing shows what the host itself says of
//! its sessions and the phone can answer Copilot's tool confirmations.
//!
//! Where it sits (`docs/architecture.md`, "The Copilot host watcher"): beside the engine's live
//! index, in the daemon. Every [`LOOK_EVERY`] it reads the endpoint registries of the Copilot
//! places (the `stores` reader: unsafe entries refused, dead pids skipped, the token kept
//! unprintable) and follows each live endpoint in a task of its own ([`host`]): connect,
//! `listSessions`, then the `root/*` notifications, publishing the host's listing into the
//! [`LiveHosts`] the index lays over the catalog, and following the sessions that need input
//! ([`approvals`]). An entry that goes (or names another pid or instance) retires its task,
//! whose listing is withdrawn at once. A host that cannot be reached, refuses our token or
//! version, or sends garbage is retried with a back-off and a warning naming its entry file,
//! never the token; it never holds up the others.
//!
//! The registry is polled rather than watched: it is one folder of a few small files per
//! editor, read in well under a millisecond, and a poll also notices a pid that died without
//! its entry being removed, which no file notification would.

mod approvals;
mod host;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_hub::Engine;
use cross_agent_stores::copilot::endpoints::EndpointAddress;
use cross_agent_stores::copilot::{CopilotPlaces, LiveHosts};
use cross_agent_telegram::Bot;
use tokio::sync::{oneshot, watch};

/// How often the endpoint registries are read: a host that starts or stops shows within this
/// and a connection's time.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What every host task shares.
struct Ctx {
    engine: Engine,
    bot: Bot,
    hosts: LiveHosts,
    /// The `clientId` this daemon presents to hosts.
    client_id: String,
}

/// One live endpoint: a new pid, instance or socket under the same entry file is another host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct HostKey {
    user_data: PathBuf,
    entry: PathBuf,
    pid: u32,
    instance_id: String,
    socket: PathBuf,
}

/// Starts watching the Copilot places of the daemon's own environment until `stop` turns true.
pub(crate) fn start(engine: Engine, bot: Bot, stop: watch::Receiver<bool>) {
    let places = cross_agent_stores::roots::StoreRoots::from_env().copilot;
    let hosts = LiveHosts::default();
    engine.attach_copilot_hosts(hosts.clone());
    let ctx = Arc::new(Ctx {
        engine,
        bot,
        hosts,
        client_id: format!("cross-agent-{}-watch", std::process::id()),
    });
    tokio::spawn(run(ctx, places, stop));
}

async fn run(ctx: Arc<Ctx>, places: CopilotPlaces, mut stop: watch::Receiver<bool>) {
    // Dropping a sender retires its host's task.
    let mut running: HashMap<HostKey, oneshot::Sender<()>> = HashMap::new();
    // Each refused entry is said once (per problem), not every second.
    let mut told: HashSet<(PathBuf, String)> = HashSet::new();
    loop {
        if *stop.borrow() {
            return;
        }
        let walked = places.clone();
        let registries = tokio::task::spawn_blocking(move || {
            walked
                .places
                .iter()
                .map(|place| {
                    (
                        place.user_data.clone(),
                        cross_agent_stores::copilot::registry(place),
                    )
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let mut seen = HashSet::new();
        for (user_data, registry) in registries {
            for problem in &registry.problems {
                if told.insert((problem.path.clone(), problem.problem.clone())) {
                    tracing::warn!(entry = %problem.path.display(), "{problem}");
                }
            }
            for endpoint in registry.endpoints {
                let socket = match &endpoint.address {
                    EndpointAddress::Socket { path } => path.clone(),
                    EndpointAddress::Tcp { host, port } => {
                        let what = format!("tcp {host}:{port}");
                        if told.insert((endpoint.entry.clone(), what)) {
                            tracing::warn!(
                                entry = %endpoint.entry.display(),
                                "a standalone Agent Host on {host}:{port} is not watched: \
                                 only the editor's Unix socket is"
                            );
                        }
                        continue;
                    }
                };
                let key = HostKey {
                    user_data: user_data.clone(),
                    entry: endpoint.entry.clone(),
                    pid: endpoint.pid,
                    instance_id: endpoint.instance_id.clone(),
                    socket: socket.clone(),
                };
                seen.insert(key.clone());
                if running.contains_key(&key) {
                    continue;
                }
                let (retire, retired) = oneshot::channel();
                running.insert(key.clone(), retire);
                let token = cross_agent_agent_host::ConnectionToken::new(endpoint.token.expose());
                tokio::spawn(host::follow(
                    ctx.clone(),
                    host::Host {
                        user_data: key.user_data,
                        entry: key.entry,
                        socket,
                        token,
                    },
                    retired,
                ));
            }
        }
        running.retain(|key, _| seen.contains(key));
        tokio::select! {
            () = tokio::time::sleep(LOOK_EVERY) => {}
            _ = stop.changed() => return,
        }
    }
}
