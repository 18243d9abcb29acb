//! What each target runs on: Postgres servers started through the
//! integration harness, pgshard in this process in front of them (with the
//! messaging tables sharded by partition id), or an external endpoint.

use anyhow::{Context, Result};
use integration::{PasswordEncryption, PgServer, ServerOptions, TestProxy};
use tokio_postgres::{Client, NoTls};

use super::options::{Options, Target};
use super::schema;

/// The role the bench connects as, on the servers and through pgshard.
const USER: &str = "app";
const PASSWORD: &str = "app-pw";
/// The pgshard cluster name.
const CLUSTER: &str = "prod";

/// Where clients connect.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub dbname: String,
}

impl Endpoint {
    /// `--target host:port` with the user, password and database flags.
    pub fn external(options: &Options, address: &str) -> Result<Endpoint> {
        let (host, port) = address
            .rsplit_once(':')
            .with_context(|| format!("--target {address}: expected host:port"))?;
        let port = port
            .parse()
            .with_context(|| format!("--target {address}: bad port"))?;
        Ok(Endpoint {
            host: host.to_owned(),
            port,
            user: options.user.clone(),
            password: options.password.clone(),
            dbname: options.dbname.clone(),
        })
    }

    fn local(port: u16, dbname: &str) -> Endpoint {
        Endpoint {
            host: "127.0.0.1".to_owned(),
            port,
            user: USER.to_owned(),
            password: PASSWORD.to_owned(),
            dbname: dbname.to_owned(),
        }
    }

    /// A new connection; its connection task runs on the current runtime.
    pub async fn connect(&self) -> Result<Client> {
        let conninfo = format!(
            "host={} port={} user={} password={} dbname={} application_name=pgshard-messaging-bench",
            self.host, self.port, self.user, self.password, self.dbname
        );
        let (client, connection) = tokio_postgres::connect(&conninfo, NoTls)
            .await
            .with_context(|| format!("connect to {}:{}", self.host, self.port))?;
        tokio::spawn(connection);
        Ok(client)
    }
}

/// Start `n` servers for the bench, each with role `app` owning database
/// `shard_<i>`.
pub fn start_servers(n: usize, options: &Options) -> Result<Vec<PgServer>> {
    let mut settings = vec![("shared_buffers".to_owned(), "256MB".to_owned())];
    if options.fsync {
        settings.push(("fsync".to_owned(), "on".to_owned()));
        settings.push(("full_page_writes".to_owned(), "on".to_owned()));
    }
    let server_options = ServerOptions {
        settings,
        ..ServerOptions::default()
    };
    let servers = PgServer::start_many(n, &server_options).context("start Postgres servers")?;
    for (i, server) in servers.iter().enumerate() {
        server.create_user(USER, PASSWORD, PasswordEncryption::ScramSha256)?;
        server.create_database(&format!("shard_{i}"), Some(USER))?;
    }
    Ok(servers)
}

/// One target, ready: the endpoint to load, the servers behind it (for
/// their CPU time and checkpoints) and the in-process pgshard, if any.
pub struct Deployment<'s> {
    pub label: String,
    pub endpoint: Endpoint,
    pub servers: &'s [PgServer],
    /// Dropped (stopped) before the servers.
    pub proxy: Option<TestProxy>,
}

impl<'s> Deployment<'s> {
    /// `target` on `servers` (one for direct and proxy, 2 or 4 for shards).
    pub fn start(target: Target, servers: &'s [PgServer], clients: usize) -> Result<Self> {
        let (endpoint, proxy) = match target {
            Target::Direct => {
                let server = servers.first().context("no server to connect to")?;
                (Endpoint::local(server.port(), "shard_0"), None)
            }
            Target::Proxy | Target::Shards2 | Target::Shards4 => {
                let proxy = TestProxy::start(&pgdog_toml(servers, clients), &users_toml())
                    .context("start pgshard")?;
                (Endpoint::local(proxy.port(), CLUSTER), Some(proxy))
            }
        };
        Ok(Deployment {
            label: target.name().to_owned(),
            endpoint,
            servers,
            proxy,
        })
    }

    /// An endpoint the bench did not start: nothing to measure behind it.
    pub fn external(endpoint: Endpoint) -> Deployment<'static> {
        Deployment {
            label: format!("{}:{}", endpoint.host, endpoint.port),
            endpoint,
            servers: &[],
            proxy: None,
        }
    }

    /// Whether pgshard runs in this process (its CPU time is then ours).
    pub fn in_process_proxy(&self) -> bool {
        self.proxy.is_some()
    }

    /// The postmasters' process ids, one per server.
    pub fn postmasters(&self) -> Result<Vec<i32>> {
        self.servers
            .iter()
            .map(|server| server.postmaster_pid().map_err(anyhow::Error::from))
            .collect()
    }

    /// CHECKPOINT every server, so no run inherits the last one's dirty pages.
    pub fn checkpoint(&self) -> Result<()> {
        for server in self.servers {
            server.psql("postgres", "CHECKPOINT")?;
        }
        Ok(())
    }
}

/// pgshard's config: cluster `prod` over `servers` (shard `i` is database
/// `shard_<i>`), a pool big enough for every bench client, and the
/// messaging tables sharded by partition id.
fn pgdog_toml(servers: &[PgServer], clients: usize) -> String {
    let mut text = format!(
        "[general]\nshutdown_timeout = 1000\ndefault_pool_size = {clients}\ncheckout_timeout = 20000\n\n\
         [admin]\npassword = \"admin-pw\"\n\n"
    );
    for (i, server) in servers.iter().enumerate() {
        text.push_str(&format!(
            "[[databases]]\nname = \"{CLUSTER}\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_{i}\"\nshard = {i}\n\n",
            server.port()
        ));
    }
    text.push_str(&schema::sharding_toml(CLUSTER));
    text
}

fn users_toml() -> String {
    format!("[[users]]\nname = \"{USER}\"\ndatabase = \"{CLUSTER}\"\npassword = \"{PASSWORD}\"\n")
}
