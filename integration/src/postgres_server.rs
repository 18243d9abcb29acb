//! One real Postgres server for tests: created from a cached initdb template in
//! its own directory, on a free port on 127.0.0.1, stopped and removed on drop
//! (also when a test panics); streaming replicas of one made with
//! `pg_basebackup -R`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tempfile::TempDir;

use crate::binaries::{run, PgBinaries};
use crate::HarnessError;

/// The superuser every server is created with; it connects with `trust` over
/// loopback and the Unix socket, so the harness itself needs no password.
pub const SUPERUSER: &str = "postgres";

/// How clients other than the superuser authenticate over TCP (`pg_hba.conf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAuth {
    Trust,
    /// Cleartext password.
    Password,
    Md5,
    ScramSha256,
}

impl HostAuth {
    fn hba_method(self) -> &'static str {
        match self {
            HostAuth::Trust => "trust",
            HostAuth::Password => "password",
            HostAuth::Md5 => "md5",
            HostAuth::ScramSha256 => "scram-sha-256",
        }
    }
}

/// How a role's password is stored (`password_encryption` at CREATE ROLE time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordEncryption {
    ScramSha256,
    Md5,
}

/// How to start a server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub host_auth: HostAuth,
    /// Extra `postgresql.conf` settings, applied after the harness's own.
    pub settings: Vec<(String, String)>,
    /// Keep the data here across runs instead of a temp dir (used by the demo).
    pub data_dir: Option<PathBuf>,
    /// Listen on this port instead of a free one.
    pub port: Option<u16>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            host_auth: HostAuth::ScramSha256,
            settings: Vec::new(),
            data_dir: None,
            port: None,
        }
    }
}

/// Where a server keeps its files.
#[derive(Debug)]
enum Home {
    /// Removed on drop.
    Temp(TempDir),
    /// Kept for the next run (the demo).
    Kept(PathBuf),
}

impl Home {
    fn path(&self) -> &Path {
        match self {
            Home::Temp(dir) => dir.path(),
            Home::Kept(dir) => dir,
        }
    }
}

/// A running (or deliberately stopped or killed) Postgres server.
#[derive(Debug)]
pub struct PgServer {
    bins: PgBinaries,
    home: Home,
    port: u16,
    running: bool,
}

/// Settings suited to tests: fast, loopback-only, room for many connections and
/// for two-phase commit. `fsync = off` survives a killed server (the OS keeps the
/// writes); `synchronous_commit` stays on, since a commit acknowledged before its
/// WAL is written would vanish in the crash tests.
const TEST_SETTINGS: &[(&str, &str)] = &[
    ("listen_addresses", "'127.0.0.1'"),
    ("fsync", "off"),
    ("full_page_writes", "off"),
    ("max_connections", "200"),
    ("max_prepared_transactions", "64"),
    ("shared_buffers", "32MB"),
    ("log_min_messages", "warning"),
    ("log_connections", "off"),
];

impl PgServer {
    /// Start one server with default options.
    pub fn start() -> Result<PgServer, HarnessError> {
        PgServer::start_with(ServerOptions::default())
    }

    /// Start `n` independent servers in parallel.
    pub fn start_many(n: usize, options: &ServerOptions) -> Result<Vec<PgServer>, HarnessError> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..n)
                .map(|_| scope.spawn(|| PgServer::start_with(options.clone())))
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().map_err(|_| HarnessError::StartPanicked)?)
                .collect()
        })
    }

    /// Start one server.
    pub fn start_with(options: ServerOptions) -> Result<PgServer, HarnessError> {
        let bins = PgBinaries::find()?;
        let home = match &options.data_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|err| HarnessError::Io(format!("create {}", dir.display()), err))?;
                Home::Kept(dir.clone())
            }
            None => Home::Temp(
                tempfile::Builder::new()
                    .prefix("pgshard-pg-")
                    .tempdir()
                    .map_err(|err| HarnessError::Io("create temp dir".to_owned(), err))?,
            ),
        };
        bins.hand_over(home.path())?;
        let data = home.path().join("data");
        if !data.join("PG_VERSION").is_file() {
            let template = template(&bins)?;
            let mut cp = bins.as_server_user("cp");
            cp.arg("-a").arg(&template).arg(&data);
            run(cp, "copy the initdb template")?;
        }
        write_config(&bins, &data, &options)?;
        PgServer::launch(bins, home, &options)
    }

    /// Start a streaming replica of `primary` (which must be running): a
    /// base backup taken with `pg_basebackup -R` (so it starts as a standby
    /// that streams from `primary`), with `options`' settings, on a free
    /// port. Roles and databases are the primary's as of the backup; later
    /// changes arrive by replication (see [`PgServer::wait_for_replay`]).
    pub fn start_replica(
        primary: &PgServer,
        options: ServerOptions,
    ) -> Result<PgServer, HarnessError> {
        let bins = primary.bins.clone();
        let home = Home::Temp(
            tempfile::Builder::new()
                .prefix("pgshard-replica-")
                .tempdir()
                .map_err(|err| HarnessError::Io("create temp dir".to_owned(), err))?,
        );
        bins.hand_over(home.path())?;
        let data = home.path().join("data");
        let mut backup = bins.command("pg_basebackup");
        backup
            .args(["-h", primary.host(), "-p"])
            .arg(primary.port.to_string())
            .args(["-U", SUPERUSER, "-D"])
            .arg(&data)
            // A fast checkpoint: the default (spread) one took 95 s here.
            .args(["-R", "-X", "stream", "--no-sync", "--checkpoint=fast"]);
        run(backup, &format!("pg_basebackup from port {}", primary.port))?;
        write_config(&bins, &data, &options)?;
        PgServer::launch(bins, home, &options)
    }

    /// Wait until this replica has replayed everything `primary` has
    /// written so far (up to 30 s).
    pub fn wait_for_replay(&self, primary: &PgServer) -> Result<(), HarnessError> {
        let lsn = primary.psql("postgres", "SELECT pg_current_wal_lsn()")?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let sql = format!("SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn");
        while self.psql("postgres", &sql)? != "t" {
            if Instant::now() > deadline {
                return Err(HarnessError::ReplayTimeout {
                    port: self.port,
                    lsn,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Start a configured data directory on `options.port` or a free port.
    fn launch(
        bins: PgBinaries,
        mut home: Home,
        options: &ServerOptions,
    ) -> Result<PgServer, HarnessError> {
        let mut attempts = 0;
        loop {
            let port = match options.port {
                Some(port) => port,
                None => free_port()?,
            };
            let mut server = PgServer {
                bins: bins.clone(),
                home,
                port,
                running: false,
            };
            match server.start_again() {
                Ok(()) => return Ok(server),
                // Another process may have taken the free port between our probe
                // and the server's bind: try a new one.
                Err(_) if options.port.is_none() && attempts < 3 => {
                    attempts += 1;
                    home = std::mem::replace(&mut server.home, Home::Kept(PathBuf::new()));
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Host to connect to.
    pub fn host(&self) -> &'static str {
        "127.0.0.1"
    }

    /// Port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's directory (data in `data/`, log in `server.log`).
    pub fn dir(&self) -> &Path {
        self.home.path()
    }

    /// A libpq connection string for `user` and `database`.
    pub fn conninfo(&self, user: &str, password: Option<&str>, database: &str) -> String {
        let mut conninfo = format!(
            "host={} port={} user={user} dbname={database}",
            self.host(),
            self.port
        );
        if let Some(password) = password {
            conninfo.push_str(&format!(" password={password}"));
        }
        conninfo
    }

    /// Run SQL as the superuser in `database` with psql; returns the unaligned,
    /// tuples-only output, trimmed.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String, HarnessError> {
        let mut cmd = std::process::Command::new(self.bins.bindir().join("psql"));
        cmd.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            self.host(),
        ])
        .arg("-p")
        .arg(self.port.to_string())
        .args(["-U", SUPERUSER, "-d", database, "-c", sql])
        .env("PGCONNECT_TIMEOUT", "10")
        .env_remove("PGPASSWORD");
        let output = run(cmd, &format!("psql on port {}: {sql}", self.port))?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// Create a role that can log in, with its password stored as `encryption`.
    pub fn create_user(
        &self,
        name: &str,
        password: &str,
        encryption: PasswordEncryption,
    ) -> Result<(), HarnessError> {
        let method = match encryption {
            PasswordEncryption::ScramSha256 => "scram-sha-256",
            PasswordEncryption::Md5 => "md5",
        };
        self.psql(
            "postgres",
            &format!(
                "SET password_encryption = '{method}'; CREATE ROLE {} LOGIN PASSWORD {}",
                quote_ident(name),
                quote_literal(password)
            ),
        )
        .map(drop)
    }

    /// Create a database owned by `owner` (a role that must exist), or by the superuser.
    pub fn create_database(&self, name: &str, owner: Option<&str>) -> Result<(), HarnessError> {
        let owner = owner.unwrap_or(SUPERUSER);
        self.psql(
            "postgres",
            &format!(
                "CREATE DATABASE {} OWNER {}",
                quote_ident(name),
                quote_ident(owner)
            ),
        )
        .map(drop)
    }

    /// Whether the server is meant to be up (started and not stopped or killed).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Start the server again after `stop` or `kill`, on the same port and data.
    pub fn start_again(&mut self) -> Result<(), HarnessError> {
        let data = self.home.path().join("data");
        let log = self.home.path().join("server.log");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut cmd = self.bins.command("pg_ctl");
            cmd.arg("start")
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(&log)
                .args(["-w", "-t", "30", "-o"])
                .arg(format!(
                    "-p {} -k {}",
                    self.port,
                    self.home.path().display()
                ));
            match run(cmd, &format!("pg_ctl start on port {}", self.port)) {
                Ok(_) => {
                    self.running = true;
                    return Ok(());
                }
                // After kill -9 the old backends may still hold shared memory for
                // a moment; the new postmaster refuses to start until they exit.
                Err(_) if Instant::now() < deadline && log_says_busy(&log) => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(err) => {
                    return Err(HarnessError::ServerStart {
                        error: Box::new(err),
                        log: log_tail(&log),
                    })
                }
            }
        }
    }

    /// The running postmaster's process id, from `postmaster.pid` in the
    /// data directory. Its children are the server's backends and background
    /// processes (benches read their CPU time from `/proc`).
    pub fn postmaster_pid(&self) -> Result<i32, HarnessError> {
        let pid_file = self.home.path().join("data/postmaster.pid");
        let text = std::fs::read_to_string(&pid_file)
            .map_err(|err| HarnessError::Io(format!("read {}", pid_file.display()), err))?;
        text.lines()
            .next()
            .and_then(|line| line.trim().parse().ok())
            .ok_or(HarnessError::NoPid(pid_file))
    }

    /// Stop the server cleanly (`pg_ctl stop -m fast`).
    pub fn stop(&mut self) -> Result<(), HarnessError> {
        self.pg_ctl_stop("fast")?;
        self.running = false;
        Ok(())
    }

    /// Kill the postmaster with SIGKILL, as a crash would, and wait until it is gone.
    pub fn kill(&mut self) -> Result<(), HarnessError> {
        let pid = Pid::from_raw(self.postmaster_pid()?);
        kill(pid, Signal::SIGKILL).map_err(|error| HarnessError::Kill { pid, error })?;
        self.running = false;
        let deadline = Instant::now() + Duration::from_secs(10);
        // Signal 0 probes for existence; ESRCH means the postmaster is gone. (A
        // zombie still answers until the process that started it reaps it, but
        // pg_ctl's postmaster is re-parented to init, which does.)
        while kill(pid, None).is_ok() {
            if Instant::now() > deadline {
                return Err(HarnessError::SurvivedKill(pid));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Stop the server at once (`pg_ctl stop -m immediate`): no shutdown
    /// checkpoint, as a crash would leave it; it recovers when started.
    pub fn stop_immediate(&mut self) -> Result<(), HarnessError> {
        self.pg_ctl_stop("immediate")?;
        self.running = false;
        Ok(())
    }

    /// Promote this streaming replica to a primary (`pg_ctl promote`),
    /// waiting until it is out of recovery.
    pub fn promote(&self) -> Result<(), HarnessError> {
        let mut cmd = self.bins.command("pg_ctl");
        cmd.arg("promote")
            .arg("-D")
            .arg(self.home.path().join("data"))
            .args(["-w", "-t", "30"]);
        run(cmd, &format!("pg_ctl promote on port {}", self.port)).map(drop)
    }

    fn pg_ctl_stop(&self, mode: &str) -> Result<(), HarnessError> {
        let mut cmd = self.bins.command("pg_ctl");
        cmd.arg("stop")
            .arg("-D")
            .arg(self.home.path().join("data"))
            .args(["-m", mode, "-w", "-t", "30"]);
        run(cmd, &format!("pg_ctl stop on port {}", self.port)).map(drop)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            // Temp data is about to be deleted: no need for a clean shutdown.
            let mode = match self.home {
                Home::Temp(_) => "immediate",
                Home::Kept(_) => "fast",
            };
            let _ = self.pg_ctl_stop(mode);
        }
    }
}

/// A port that was free a moment ago on 127.0.0.1.
fn free_port() -> Result<u16, HarnessError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|err| HarnessError::Io("bind 127.0.0.1:0".to_owned(), err))?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|err| HarnessError::Io("local_addr".to_owned(), err))
}

/// A data directory made by initdb once per Postgres version and reused by
/// copying: initdb costs seconds, a copy a fraction of one. It lives in the temp
/// dir as a cache; it is created under a private name and renamed into place, so
/// concurrent test processes never see half of one.
fn template(bins: &PgBinaries) -> Result<PathBuf, HarnessError> {
    // Threads of one process share a staging name below; one at a time.
    static CREATING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = CREATING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut version = bins.command("pg_ctl");
    version.arg("--version");
    let version = run(version, "pg_ctl --version")?;
    let version = String::from_utf8_lossy(&version.stdout)
        .split_whitespace()
        .nth(2)
        .unwrap_or("unknown")
        .to_owned();
    let owner = if bins.runs_as_postgres() {
        "postgres".to_owned()
    } else {
        nix::unistd::geteuid().to_string()
    };
    let path = std::env::temp_dir().join(format!("pgshard-initdb-{version}-{owner}-v1"));
    if path.join("PG_VERSION").is_file() {
        return Ok(path);
    }
    let staging = std::env::temp_dir().join(format!(
        "pgshard-initdb-{version}-{owner}-v1.{}.tmp",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&staging);
    let mut initdb = bins.command("initdb");
    initdb.arg("-D").arg(&staging).args([
        "-U",
        SUPERUSER,
        "--auth=trust",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
    ]);
    run(initdb, "initdb")?;
    match std::fs::rename(&staging, &path) {
        Ok(()) => Ok(path),
        // Another process finished first: use theirs.
        Err(_) if path.join("PG_VERSION").is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(path)
        }
        Err(err) => Err(HarnessError::Io(
            format!("rename {}", staging.display()),
            err,
        )),
    }
}

/// Append the harness's settings to postgresql.conf and write pg_hba.conf.
fn write_config(
    bins: &PgBinaries,
    data: &Path,
    options: &ServerOptions,
) -> Result<(), HarnessError> {
    let mut conf = String::from("\n# pgshard test harness\n");
    for (key, value) in TEST_SETTINGS.iter().map(|(k, v)| (*k, *v)).chain(
        options
            .settings
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    ) {
        conf.push_str(&format!("{key} = {value}\n"));
    }
    let hba = format!(
        "local all all trust\n\
         host all {SUPERUSER} 127.0.0.1/32 trust\n\
         host replication {SUPERUSER} 127.0.0.1/32 trust\n\
         host all all 127.0.0.1/32 {}\n",
        options.host_auth.hba_method()
    );
    // A kept data dir is configured again on every start: the harness's lines
    // go into a file of their own that postgresql.conf includes once.
    let conf_path = data.join("pgshard.conf");
    let main_conf = data.join("postgresql.conf");
    write_file(&conf_path, &conf)?;
    write_file(&data.join("pg_hba.conf"), &hba)?;
    let main = std::fs::read_to_string(&main_conf)
        .map_err(|err| HarnessError::Io(format!("read {}", main_conf.display()), err))?;
    if !main.contains("include_if_exists = 'pgshard.conf'") {
        write_file(
            &main_conf,
            &format!("{main}\ninclude_if_exists = 'pgshard.conf'\n"),
        )?;
    }
    for path in [&conf_path, &data.join("pg_hba.conf"), &main_conf] {
        bins.hand_over(path)?;
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<(), HarnessError> {
    std::fs::write(path, text)
        .map_err(|err| HarnessError::Io(format!("write {}", path.display()), err))
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn log_says_busy(log: &Path) -> bool {
    let tail = log_tail(log);
    tail.contains("pre-existing shared memory block")
        || tail.contains("lock file") && tail.contains("already exists")
}

/// Quote an SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quote an SQL string literal.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}
