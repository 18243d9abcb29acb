//! pgshard running in-process on 127.0.0.1:0 on worker threads of its own
//! (as the binary runs), so sync and async tests alike can use it; stopped
//! when dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use router::config::Config;
use tokio::sync::oneshot;

use crate::HarnessError;

/// Why the proxy thread did not start serving.
enum Refused {
    Bind(std::io::Error),
    NodeId(String),
}

/// A running in-process proxy.
#[derive(Debug)]
pub struct TestProxy {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    /// Ends the proxy at once, as `kill -9` would for its servers.
    crash: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    config_dir: Option<tempfile::TempDir>,
    state: Arc<proxy::state::State>,
}

impl TestProxy {
    /// Write the two config texts to files (so RELOAD and SIGHUP-style
    /// reloads can re-read them; see [`TestProxy::rewrite_config`]), validate
    /// them and serve them on a free loopback port.
    pub fn start(pgdog_toml: &str, users_toml: &str) -> Result<TestProxy, HarnessError> {
        let dir = tempfile::tempdir().map_err(|e| HarnessError::Io("config dir".into(), e))?;
        let paths = (dir.path().join("pgdog.toml"), dir.path().join("users.toml"));
        let write = |path: &std::path::Path, text: &str| {
            std::fs::write(path, text).map_err(|e| HarnessError::Io(path.display().to_string(), e))
        };
        write(&paths.0, pgdog_toml)?;
        write(&paths.1, users_toml)?;
        let config = Config::from_toml(pgdog_toml, users_toml)?;
        let mut proxy = TestProxy::serve(Arc::new(config), Some(paths))?;
        proxy.config_dir = Some(dir);
        Ok(proxy)
    }

    /// Serve an already validated config on a free loopback port.
    pub fn start_config(config: Arc<Config>) -> Result<TestProxy, HarnessError> {
        TestProxy::serve(config, None)
    }

    /// Replace the config files a RELOAD reads.
    pub fn rewrite_config(&self, pgdog_toml: &str, users_toml: &str) -> Result<(), HarnessError> {
        let Some(dir) = &self.config_dir else {
            return Err(HarnessError::NoConfigFiles);
        };
        for (name, text) in [("pgdog.toml", pgdog_toml), ("users.toml", users_toml)] {
            let path = dir.path().join(name);
            std::fs::write(&path, text)
                .map_err(|e| HarnessError::Io(path.display().to_string(), e))?;
        }
        Ok(())
    }

    fn serve(
        config: Arc<Config>,
        paths: Option<(std::path::PathBuf, std::path::PathBuf)>,
    ) -> Result<TestProxy, HarnessError> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |err| HarnessError::Io(what, err)
        };
        // pgshard's own threading (proxy/src/workers.rs): two worker
        // threads, each with its runtime and a listener on the shared port.
        // Bound on the proxy's thread, so this works from inside another
        // runtime too (async tests).
        let (stop, stopped) = oneshot::channel::<()>();
        let (crash, crashed) = oneshot::channel::<()>();
        let (bound, ready) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let mut workers = match proxy::workers::Workers::bind(2, "127.0.0.1", 0) {
                Ok(workers) => workers,
                Err(err) => {
                    let _ = bound.send(Err(Refused::Bind(err)));
                    return;
                }
            };
            if let Err(err) = workers.bind_unix(&config.general) {
                let _ = bound.send(Err(Refused::Bind(std::io::Error::other(err.to_string()))));
                return;
            }
            let state = workers.in_first(|| proxy::state::State::new(config, paths));
            // As the binary does: a node id in use refuses to start.
            if let Some(Err(err)) = workers.block_on_first(proxy::node_lock::acquire(&state)) {
                let _ = bound.send(Err(Refused::NodeId(err.to_string())));
                return;
            }
            let _ = bound.send(Ok((workers.local_addr(), Arc::clone(&state))));
            // A crash stops serving without waiting for anything: a session
            // stuck at an injected fault never finishes (it is dropped with
            // its runtime, its sockets closed without a word).
            workers.run(state, async {
                tokio::select! {
                    _ = stopped => {}
                    _ = crashed => {}
                }
            });
            // Client tasks still running were dropped with the runtimes.
        });
        let (addr, state) = ready
            .recv()
            .map_err(|_| HarnessError::ProxyThreadEnded)?
            .map_err(|refused| match refused {
                Refused::Bind(err) => io("bind 127.0.0.1:0 (and unix_socket_dir)")(err),
                Refused::NodeId(why) => HarnessError::ProxyRefused(why),
            })?;
        Ok(TestProxy {
            addr,
            stop: Some(stop),
            crash: Some(crash),
            thread: Some(thread),
            config_dir: None,
            state,
        })
    }

    /// The proxy's state (for fault injection and inspection).
    pub fn state(&self) -> &Arc<proxy::state::State> {
        &self.state
    }

    /// Stop at once: every task dropped, every socket closed, nothing
    /// drained or rolled back (what `kill -9` does, as the servers see it).
    pub fn crash(mut self) {
        if let Some(crash) = self.crash.take() {
            let _ = crash.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// Where the proxy listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port it listens on (host is 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
