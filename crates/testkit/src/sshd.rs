//! A real OpenSSH server on loopback, standing for "another machine" in the tests of the SSH
//! link (docs/remote.md). Nothing of the real user's ssh setup is read or written.
//!
//! [`Sshd::start`] makes a temporary directory with:
//! - `host_key`: the server's own key (`ssh-keygen`), and `known_hosts` naming it for
//!   `[127.0.0.1]:<port>`;
//! - `client_key` and `authorized_keys`, whose one entry forces `login` (`command=`), so every
//!   connection runs as the "remote": `login` sets `HOME` and `CROSS_AGENT_HOME` to the remote's
//!   own directories and puts `remote-bin/` first on `PATH`, where `cross-agent` is the binary
//!   under test (or, with [`Sshd::replace_remote_program`], a script of a test's), then runs
//!   the command ssh was given;
//! - `sshd_config` (`StrictModes no`, since a temporary directory's parents are not the owner's
//!   alone; no PAM, keys only) and `sshd`, started as `/usr/sbin/sshd -D -e -f sshd_config` on a
//!   free loopback port as the current user;
//! - `ssh_config` (alias [`Sshd::ALIAS`] → that port, the client key, the `known_hosts`, no
//!   agent) and `ssh`, a wrapper running `ssh -F ssh_config "$@"`: point the daemon's
//!   `CROSS_AGENT_SSH` at it. ssh reads `~/.ssh` from the password database, not from `HOME`,
//!   so `-F` is the only way to keep the real user's configuration out.
//!
//! Run as root, sshd insists on its privilege-separation directory `/run/sshd` (Debian's
//! service creates it at boot); the rig creates it, empty and root-owned, when it is missing.
//! Debian's package is `openssh-server` (`scripts/install-debian-packages`).

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// Where Debian's openssh-server puts the server.
pub const SSHD: &str = "/usr/sbin/sshd";

/// A running sshd and its "remote" machine. Dropping it stops the server and the remote's
/// daemon.
#[derive(Debug)]
pub struct Sshd {
    dir: tempfile::TempDir,
    child: Option<Child>,
    port: u16,
    cross_agent: PathBuf,
}

impl Sshd {
    /// The ssh alias the rig's `ssh_config` defines for the server.
    pub const ALIAS: &'static str = "there";

    /// Whether this machine can run the rig (the server is installed).
    pub fn available() -> bool {
        Path::new(SSHD).exists()
    }

    /// Starts a server whose logins run `cross_agent` as the remote's `cross-agent`.
    pub fn start(cross_agent: &Path) -> Result<Sshd> {
        if !Self::available() {
            bail!(
                "{SSHD} is missing: install Debian's openssh-server (scripts/install-debian-packages)"
            );
        }
        let dir = tempfile::Builder::new().prefix("xa-sshd-").tempdir()?;
        let root = dir.path();
        for sub in ["remote-bin", "remote-home", "remote-state"] {
            std::fs::create_dir_all(root.join(sub))?;
        }
        std::fs::set_permissions(
            root.join("remote-state"),
            std::fs::Permissions::from_mode(0o700),
        )?;
        keygen(&root.join("host_key"))?;
        keygen(&root.join("client_key"))?;
        std::os::unix::fs::symlink(cross_agent, root.join("remote-bin/cross-agent"))?;
        let login = root.join("login");
        write_script(
            &login,
            &format!(
                "#!/bin/sh\n\
                 # The remote machine: its own HOME and CROSS_AGENT_HOME, its cross-agent first on PATH.\n\
                 export HOME='{home}' CROSS_AGENT_HOME='{state}' PATH='{bin}':/usr/local/bin:/usr/bin:/bin\n\
                 exec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n",
                home = root.join("remote-home").display(),
                state = root.join("remote-state").display(),
                bin = root.join("remote-bin").display(),
            ),
        )?;
        let client_pub = std::fs::read_to_string(root.join("client_key.pub"))?;
        std::fs::write(
            root.join("authorized_keys"),
            format!(
                "command=\"{}\",no-pty,no-port-forwarding,no-agent-forwarding,no-X11-forwarding {}",
                login.display(),
                client_pub.trim()
            ),
        )?;
        ensure_privsep_dir()?;
        let port = free_port()?;
        let user = current_user()?;
        std::fs::write(
            root.join("sshd_config"),
            format!(
                "ListenAddress 127.0.0.1\n\
                 Port {port}\n\
                 HostKey {root}/host_key\n\
                 PidFile {root}/sshd.pid\n\
                 AuthorizedKeysFile {root}/authorized_keys\n\
                 AllowUsers {user}\n\
                 StrictModes no\n\
                 UsePAM no\n\
                 PasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\n\
                 PermitUserEnvironment no\n\
                 LogLevel VERBOSE\n",
                root = root.display(),
            ),
        )?;
        std::fs::write(
            root.join("ssh_config"),
            config_block(Self::ALIAS, "127.0.0.1", port, &user, root),
        )?;
        let host_pub = std::fs::read_to_string(root.join("host_key.pub"))?;
        std::fs::write(
            root.join("known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", host_pub.trim()),
        )?;
        write_script(
            &root.join("ssh"),
            &format!(
                "#!/bin/sh\nexec ssh -F '{}' \"$@\"\n",
                root.join("ssh_config").display()
            ),
        )?;
        let mut sshd = Sshd {
            dir,
            child: None,
            port,
            cross_agent: cross_agent.to_owned(),
        };
        sshd.serve()?;
        Ok(sshd)
    }

    /// Starts the server process and waits until it accepts connections.
    fn serve(&mut self) -> Result<()> {
        let root = self.dir.path();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(root.join("sshd.log"))?;
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(root.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {SSHD}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok() {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("sshd exited with {status}: {}", self.log());
            }
            if Instant::now() >= deadline {
                bail!(
                    "sshd did not listen on port {} within 10 s: {}",
                    self.port,
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop_server(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The program to give the daemon as `CROSS_AGENT_SSH`: ssh with the rig's configuration.
    pub fn ssh_program(&self) -> PathBuf {
        self.dir.path().join("ssh")
    }

    /// An ssh program reaching several rigs, each under its own alias, and `closed` aliases
    /// pointing at a loopback port nothing listens on (ssh says "Connection refused"): one
    /// daemon's `CROSS_AGENT_SSH` linking to several "machines". Written into `dir`.
    pub fn ssh_program_for(dir: &Path, rigs: &[(&str, &Sshd)], closed: &[&str]) -> Result<PathBuf> {
        let user = current_user()?;
        let mut config = String::new();
        for (alias, rig) in rigs {
            config.push_str(&config_block(
                alias,
                "127.0.0.1",
                rig.port,
                &user,
                rig.dir.path(),
            ));
        }
        for alias in closed {
            let root = dir.join(format!("closed-{alias}"));
            std::fs::create_dir_all(&root)?;
            config.push_str(&config_block(
                alias,
                "127.0.0.1",
                free_port()?,
                &user,
                &root,
            ));
        }
        let file = dir.join("ssh_config");
        std::fs::write(&file, config)?;
        let program = dir.join("ssh");
        write_script(
            &program,
            &format!("#!/bin/sh\nexec ssh -F '{}' \"$@\"\n", file.display()),
        )?;
        Ok(program)
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The remote's `CROSS_AGENT_HOME`.
    pub fn remote_state(&self) -> PathBuf {
        self.dir.path().join("remote-state")
    }

    /// The remote's `HOME`.
    pub fn remote_home(&self) -> PathBuf {
        self.dir.path().join("remote-home")
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// Makes the remote's `cross-agent` the shell script `script` instead of the binary (an
    /// older release, say).
    pub fn replace_remote_program(&self, script: &str) -> Result<()> {
        let path = self.dir.path().join("remote-bin/cross-agent");
        std::fs::remove_file(&path)?;
        write_script(&path, script)
    }

    /// Gives the server a new host key and restarts it on the same port: the `known_hosts`
    /// the client trusts no longer matches, as when a machine is reinstalled (or impersonated).
    pub fn change_host_key(&mut self) -> Result<()> {
        self.stop_server();
        let key = self.dir.path().join("host_key");
        std::fs::remove_file(&key)?;
        std::fs::remove_file(key.with_extension("pub"))?;
        keygen(&key)?;
        self.serve()
    }

    /// A `cross-agent` command run on the remote, as `login` runs it.
    pub fn remote_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.cross_agent);
        command
            .args(args)
            .env("HOME", self.remote_home())
            .env("CROSS_AGENT_HOME", self.remote_state())
            .env_remove("CROSS_AGENT_DAEMON_BIN")
            .env_remove("CROSS_AGENT_SSH");
        command
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop_server();
        // The remote's daemon (started by `rpc --stdio`) would stop by itself once its home is
        // removed; stopping it here is quicker and leaves nothing behind.
        let _ = self
            .remote_command(&["daemon", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// One `Host` block of an `ssh_config`: the alias to that port with the rig's client key and
/// `known_hosts` in `root`, no agent, and nothing of the real user's configuration.
fn config_block(alias: &str, host: &str, port: u16, user: &str, root: &Path) -> String {
    format!(
        "Host {alias}\n\
         \x20 HostName {host}\n\
         \x20 Port {port}\n\
         \x20 User {user}\n\
         \x20 IdentityFile {root}/client_key\n\
         \x20 IdentitiesOnly yes\n\
         \x20 IdentityAgent none\n\
         \x20 UserKnownHostsFile {root}/known_hosts\n\
         \x20 GlobalKnownHostsFile /dev/null\n\
         \x20 StrictHostKeyChecking yes\n\
         \x20 UpdateHostKeys no\n",
        root = root.display(),
    )
}

fn keygen(path: &Path) -> Result<()> {
    let status = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "cross-agent-test",
            "-f",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .context("running ssh-keygen")?;
    if !status.success() {
        bail!("ssh-keygen failed for {}: {status}", path.display());
    }
    Ok(())
}

fn write_script(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// A port nothing listens on now (the kernel's pick); sshd binds it a moment later.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

fn current_user() -> Result<String> {
    let out = Command::new("id").arg("-un").output()?;
    if !out.status.success() {
        bail!("`id -un` failed");
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// As root, sshd refuses to start without `/run/sshd` (its privilege-separation chroot).
fn ensure_privsep_dir() -> Result<()> {
    if rustix::process::geteuid().is_root() && !Path::new("/run/sshd").exists() {
        std::fs::create_dir_all("/run/sshd").context("creating /run/sshd for sshd")?;
        std::fs::set_permissions("/run/sshd", std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}
