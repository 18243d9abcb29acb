//! Pass-through sessions: the client's startup is checked against the config,
//! then its bytes are relayed untouched to shard 0 of the cluster it names.
//!
//! This is the foundation stage of the proxy. Authentication is the server's,
//! no pooling happens, and nothing is parsed past the startup packet; sessions
//! with pooling and routing replace this module.

use std::sync::Arc;

use bytes::BytesMut;
use router::config::{Config, Database};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tracing::{debug, info, warn};

use crate::protocol::backend::{error_response, sqlstate, Severity};
use crate::protocol::startup::{
    decode_startup, encode_cancel, Startup, StartupError, StartupMessage,
};

/// Serve one client connection to completion. Errors end this client only.
pub async fn serve(mut client: TcpStream, config: Arc<Config>) {
    let _ = client.set_nodelay(true);
    let mut buf = BytesMut::with_capacity(1024);
    let startup = match read_startup(&mut client, &mut buf, &config).await {
        Ok(Some(startup)) => startup,
        Ok(None) => return,
        Err(err) => {
            debug!(%err, "startup refused");
            let _ = fatal(&mut client, sqlstate::PROTOCOL_VIOLATION, &err.to_string()).await;
            return;
        }
    };
    let user = startup.param("user").unwrap_or_default().to_owned();
    let database = startup.param("database").unwrap_or(&user).to_owned();
    let Some(cluster) = config.clusters.get(&database) else {
        let message = format!("database \"{database}\" does not exist in pgshard's config");
        let _ = fatal(&mut client, sqlstate::INVALID_CATALOG_NAME, &message).await;
        return;
    };
    if config.user(&user, &database).is_none() {
        let message = format!("no such user \"{user}\" for database \"{database}\"");
        let _ = fatal(&mut client, sqlstate::INVALID_AUTHORIZATION, &message).await;
        return;
    }
    let Some(shard) = cluster.shards.first() else {
        return;
    };
    let mut server = match connect(shard).await {
        Ok(server) => server,
        Err(err) => {
            warn!(%err, host = %shard.host, port = shard.port, "cannot reach shard 0");
            let message = format!("cannot connect to shard 0 of \"{database}\"");
            let _ = fatal(&mut client, sqlstate::CONNECTION_FAILURE, &message).await;
            return;
        }
    };
    let mut backend_startup = startup;
    backend_startup.set_param("database", shard.server_database());
    let mut out = BytesMut::with_capacity(256 + buf.len());
    backend_startup.encode(&mut out);
    // Anything the client pipelined behind its startup goes along untouched.
    out.extend_from_slice(&buf);
    if server.write_all(&out).await.is_err() {
        return;
    }
    info!(%user, %database, "relaying to shard 0");
    match tokio::io::copy_bidirectional(&mut client, &mut server).await {
        Ok((up, down)) => debug!(up, down, "session ended"),
        Err(err) => debug!(%err, "session ended with an error"),
    }
}

/// Read first messages until a StartupMessage arrives. `Ok(None)`: the client
/// went away or only sent a CancelRequest.
async fn read_startup(
    client: &mut TcpStream,
    buf: &mut BytesMut,
    config: &Config,
) -> Result<Option<Startup>, StartupError> {
    loop {
        match decode_startup(buf)? {
            Some(StartupMessage::Startup(startup)) => return Ok(Some(startup)),
            // No TLS or GSS encryption yet: say so and let the client go on in clear.
            Some(StartupMessage::SslRequest | StartupMessage::GssEncRequest) => {
                if client.write_all(b"N").await.is_err() {
                    return Ok(None);
                }
            }
            Some(StartupMessage::Cancel {
                process_id,
                secret_key,
            }) => {
                forward_cancel(config, process_id, &secret_key).await;
                return Ok(None);
            }
            None => match client.read_buf(buf).await {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => {}
            },
        }
    }
}

/// In pass-through the client holds the server's own cancel key, which only the
/// server that issued it accepts; servers ignore keys they did not issue, so the
/// request goes to every configured server.
async fn forward_cancel(config: &Config, process_id: u32, secret_key: &[u8]) {
    let mut packet = BytesMut::with_capacity(12 + secret_key.len());
    encode_cancel(process_id, secret_key, &mut packet);
    for shard in config.clusters.values().flat_map(|c| &c.shards) {
        if let Ok(mut server) = connect(shard).await {
            let _ = server.write_all(&packet).await;
            let mut sink = [0u8; 1];
            // The server closes the socket once it has read the request.
            let _ = server.read(&mut sink).await;
        }
    }
}

async fn connect(shard: &Database) -> std::io::Result<TcpStream> {
    let stream = TcpStream::connect((shard.host.as_str(), shard.port)).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

async fn fatal(client: &mut TcpStream, code: &str, message: &str) -> std::io::Result<()> {
    let mut out = BytesMut::new();
    error_response(&mut out, Severity::Fatal, code, message);
    client.write_all(&out).await
}
