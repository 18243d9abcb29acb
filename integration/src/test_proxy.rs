//! pgshard running in-process on 127.0.0.1:0 on a runtime of its own, so sync
//! and async tests alike can use it; stopped when dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use router::config::Config;
use tokio::sync::oneshot;

use crate::HarnessError;

/// A running in-process proxy.
#[derive(Debug)]
pub struct TestProxy {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestProxy {
    /// Validate the two config texts and serve them on a free loopback port.
    pub fn start(pgdog_toml: &str, users_toml: &str) -> Result<TestProxy, HarnessError> {
        let config = Config::from_toml(pgdog_toml, users_toml)
            .map_err(|err| HarnessError::Setup(format!("config: {err}")))?;
        TestProxy::start_config(Arc::new(config))
    }

    /// Serve an already validated config on a free loopback port.
    pub fn start_config(config: Arc<Config>) -> Result<TestProxy, HarnessError> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |err| HarnessError::Io(what, err)
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(io("build runtime"))?;
        // Bound with std so that this works from inside another runtime too
        // (async tests): the tokio listener is made on the proxy's own thread.
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").map_err(io("bind 127.0.0.1:0"))?;
        listener
            .set_nonblocking(true)
            .map_err(io("set_nonblocking"))?;
        let addr = listener.local_addr().map_err(io("local_addr"))?;
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => {
                        proxy::server::run(listener, config, async {
                            let _ = stopped.await;
                        })
                        .await
                    }
                    Err(err) => tracing::error!(%err, "test proxy cannot listen"),
                }
            });
            // Client tasks still running are dropped with the runtime here.
        });
        Ok(TestProxy {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
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
