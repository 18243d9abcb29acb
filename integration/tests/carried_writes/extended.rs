//! A generated write ([`Write`]) sent in the extended protocol, the ways
//! drivers send one: prepared then bound with binary parameters
//! (tokio-postgres `query_raw`, a named statement), parsed with its types
//! and bound in one round trip (`query_typed_raw`, the unnamed statement),
//! or over a raw socket with text parameters and no declared types
//! (Parse, Bind, Describe, Execute, Sync). Its outcome: the rows it
//! returned and its tag, or its error's code.

use std::time::Duration;

use futures_util::TryStreamExt;
use tokio_postgres::types::Type;
use tokio_postgres::Client;

use super::generator::Write;
use crate::common::wire::{self, Wire};
use crate::common::{code, describe};

/// How a write is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    Prepared,
    Typed,
    Text,
}

pub const WAYS: [Way; 3] = [Way::Prepared, Way::Typed, Way::Text];

/// The rows (as text) and the tag, or the error's code.
pub type Outcome = Result<(Vec<Vec<String>>, String), String>;

/// Under load pgshard's read of the move records may be late: it then
/// refuses keyless statements for a moment and says to retry (for up to
/// [`TRIES`] half-seconds here).
const RETRY: &str = "has not read lately";
const TRIES: usize = 60;

/// `write` through `client` (`Way::Prepared` or `Way::Typed`).
pub async fn driver(client: &Client, way: Way, write: &Write) -> Outcome {
    for tries in 1.. {
        match driver_once(client, way, write).await {
            Err(e) if describe(&e).contains(RETRY) && tries < TRIES => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => {
                eprintln!("{} {:?}: {}", write.bound, way, describe(&e));
                return Err(code(&e).unwrap_or("?").to_owned());
            }
            Ok(outcome) => return Ok(outcome),
        }
    }
    unreachable!("the loop returns")
}

async fn driver_once(
    client: &Client,
    way: Way,
    write: &Write,
) -> Result<(Vec<Vec<String>>, String), tokio_postgres::Error> {
    let values = write.params.iter().map(|p| p.value());
    let stream = match way {
        Way::Typed => {
            let typed = write.params.iter().map(|p| (p.value(), p.type_()));
            client.query_typed_raw(&write.bound, typed).await?
        }
        _ => client.query_raw(&write.bound, values).await?,
    };
    let mut stream = std::pin::pin!(stream);
    let mut rows = Vec::new();
    while let Some(row) = stream.try_next().await? {
        rows.push((0..row.len()).map(|i| cell(&row, i)).collect());
    }
    let tag = stream.rows_affected().unwrap_or_default().to_string();
    Ok((rows, tag))
}

/// A returned value as text, by its column's type.
fn cell(row: &tokio_postgres::Row, i: usize) -> String {
    let text = match *row.columns()[i].type_() {
        Type::INT8 => row.get::<_, Option<i64>>(i).map(|v| v.to_string()),
        Type::INT4 => row.get::<_, Option<i32>>(i).map(|v| v.to_string()),
        Type::BOOL => row.get::<_, Option<bool>>(i).map(|v| v.to_string()),
        _ => row.get::<_, Option<String>>(i),
    };
    text.unwrap_or_else(|| "NULL".to_owned())
}

/// `write` over `wire`: text parameters, no declared types; the replies'
/// kinds must be one Postgres's, so they are part of the tag.
pub async fn text(wire: &mut Wire, write: &Write) -> Outcome {
    let texts: Vec<String> = write.params.iter().map(|p| p.text()).collect();
    let params: Vec<Option<&str>> = texts.iter().map(|t| Some(t.as_str())).collect();
    let messages = [
        wire::parse("", &write.bound),
        wire::bind_text("", "", &params),
        wire::describe(b'P', ""),
        wire::execute(),
        wire::sync(),
    ]
    .concat();
    for tries in 1.. {
        wire.send(&messages).await;
        let replies = wire.until_ready().await;
        let error = replies.iter().find(|(tag, _)| *tag == b'E');
        if let Some((_, body)) = error {
            let text = String::from_utf8_lossy(body).into_owned();
            if text.contains(RETRY) && tries < TRIES {
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            eprintln!("{} (text): {text}", write.bound);
            return Err(wire::sqlstate(body).unwrap_or_default());
        }
        let completes: Vec<String> = replies
            .iter()
            .filter(|(tag, _)| *tag == b'C')
            .map(|(_, body)| String::from_utf8_lossy(body).into_owned())
            .collect();
        let tag = format!("{} {}", wire::tags(&replies), completes.join(","));
        return Ok((wire::data_rows(&replies), tag));
    }
    unreachable!("the loop returns")
}
