//! One server the differential test asks (pgshard or the reference
//! Postgres), in the ways a client can: the simple protocol and the
//! extended protocol with text results over a raw socket (RowDescription,
//! DataRows and CommandComplete exactly as sent), the extended protocol
//! with binary results through tokio-postgres, each value decoded to a
//! canonical text by its type; and read in parts: a cursor (DECLARE, then
//! FETCH in chunks, in the simple protocol, inside a transaction) and a
//! row-limited portal (tokio-postgres `bind`, then `query_portal` in a
//! loop).

use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_util::TryStreamExt;
use tokio_postgres::types::{FromSql, Type};
use tokio_postgres::Client;

use crate::common::wire::{self, Read, Wire};
use crate::common::{connect_str, describe};

/// How long one statement may take before the server counts as stuck.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protocol {
    Simple,
    ExtendedText,
    ExtendedBinary,
    /// The statement PREPAREd (some literals made parameters), then
    /// EXECUTEd with them as arguments, each a simple query.
    PreparedSimple,
    /// The same with the EXECUTE sent through Parse/Bind/Execute.
    PreparedExtended,
    /// `PREPARE ...; EXECUTE ...` as one simple query.
    PreparedString,
    /// DECLARE, then FETCH in chunks (simple protocol, in a transaction).
    Cursor,
    /// A portal read with a row limit per Execute (extended, binary, in a
    /// transaction).
    Portal,
    /// DECLARE, then FETCH and MOVE in turns (simple protocol, in a
    /// transaction): the rows fetched and every FETCH and MOVE tag; only
    /// for statements whose ORDER BY fixes every row's place.
    CursorMove,
    /// Inside a transaction block that wrote first ([`BLOCK_WRITES`]),
    /// each a simple query, rolled back after.
    Block,
}

/// What a [`Protocol::Block`] block writes before its statement: rows on
/// every shard and the omnisharded table, so that a statement finished on
/// the coordinator must see the block's own writes.
pub const BLOCK_WRITES: [&str; 2] = [
    "UPDATE users SET score = score + 1 WHERE id % 7 = 3",
    "UPDATE teams SET weight = weight + 1 WHERE grp % 2 = 0",
];

impl Protocol {
    pub const ALL: [Protocol; 5] = [
        Protocol::Simple,
        Protocol::ExtendedText,
        Protocol::ExtendedBinary,
        Protocol::Cursor,
        Protocol::Portal,
    ];

    /// The ways a statement runs prepared with SQL PREPARE.
    pub const PREPARED: [Protocol; 3] = [
        Protocol::PreparedSimple,
        Protocol::PreparedExtended,
        Protocol::PreparedString,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::ExtendedText => "extended/text",
            Protocol::ExtendedBinary => "extended/binary",
            Protocol::PreparedSimple => "prepared/simple",
            Protocol::PreparedExtended => "prepared/extended",
            Protocol::PreparedString => "prepared/string",
            Protocol::Cursor => "cursor/fetch",
            Protocol::Portal => "portal/limit",
            Protocol::CursorMove => "cursor/fetch+move",
            Protocol::Block => "simple/in a block",
        }
    }
}

/// A RowDescription field as clients see it (the table OID and column
/// number differ between servers and are left out). tokio-postgres does not
/// expose the type modifier or format: the binary path has `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub type_oid: u32,
    pub type_modifier: Option<i32>,
    pub format: Option<i16>,
}

/// One row's values as text (NULL is `None`).
pub type Row = Vec<Option<String>>;

/// A statement's rows with their description and CommandComplete tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    pub tag: Option<String>,
}

#[derive(Debug, Clone)]
pub enum Outcome {
    Rows(Answer),
    Error {
        code: String,
        message: String,
    },
    /// No answer: the connection closed or went silent (it is reopened).
    Broken(String),
}

/// Connections to one server: a raw socket for the text paths and a
/// tokio-postgres client for the binary one.
pub struct Target {
    port: u16,
    wire_user: &'static str,
    database: String,
    conninfo: String,
    wire: Wire,
    client: Client,
}

impl Target {
    /// `wire_user` must log in without a password; `conninfo` is for
    /// tokio-postgres.
    pub async fn connect(
        port: u16,
        wire_user: &'static str,
        database: &str,
        conninfo: String,
    ) -> Target {
        Target {
            port,
            wire_user,
            database: database.to_owned(),
            wire: Wire::login(port, wire_user, database).await,
            client: connect_str(&conninfo).await.unwrap(),
            conninfo,
        }
    }

    /// `sql` as one simple query: every reply up to its ReadyForQuery, as
    /// (tag, body); `Err` when the connection broke (it is reopened).
    pub async fn replies(&mut self, sql: &str) -> Result<Vec<(u8, Bytes)>, String> {
        self.wire.send(&wire::query(sql)).await;
        let mut replies = Vec::new();
        loop {
            let why = match self.wire.read_within(STATEMENT_TIMEOUT).await {
                Read::Message(tag, body) => {
                    replies.push((tag, body));
                    if tag == b'Z' {
                        return Ok(replies);
                    }
                    continue;
                }
                Read::Closed => "connection closed",
                Read::Silent => "no answer in time",
            };
            self.reconnect().await;
            return Err(why.to_owned());
        }
    }

    /// Run `sql` (a schema change) as the user the statements run as;
    /// whether it worked.
    pub async fn setup(&self, sql: &str) -> bool {
        self.client.batch_execute(sql).await.is_ok()
    }

    /// Run `sql` in `protocol`; a cursor or portal is read `chunk` rows at
    /// a time.
    pub async fn run(&mut self, protocol: Protocol, sql: &str, chunk: u32) -> Outcome {
        let outcome = match protocol {
            Protocol::Cursor => self.cursor(sql, chunk, false).await,
            Protocol::CursorMove => self.cursor(sql, chunk, true).await,
            Protocol::Portal => {
                let read = portal(&mut self.client, sql, chunk);
                match tokio::time::timeout(STATEMENT_TIMEOUT * 4, read).await {
                    Ok(outcome) => outcome,
                    Err(_) => Outcome::Broken("no answer in time".to_owned()),
                }
            }
            Protocol::Simple => self.exchange(&wire::query(sql)).await,
            Protocol::Block => self.in_block(sql).await,
            Protocol::ExtendedText => self.exchange(&extended(sql)).await,
            Protocol::PreparedSimple | Protocol::PreparedExtended | Protocol::PreparedString => {
                Outcome::Broken(format!("{} runs through run_prepared", protocol.name()))
            }
            Protocol::ExtendedBinary => {
                match tokio::time::timeout(STATEMENT_TIMEOUT, binary(&self.client, sql)).await {
                    Ok(outcome) => outcome,
                    Err(_) => Outcome::Broken("no answer in time".to_owned()),
                }
            }
        };
        if let Outcome::Broken(_) = outcome {
            self.reconnect().await;
        }
        outcome
    }

    /// Run `prepare` (`PREPARE name AS ...`), then `execute` (its
    /// EXECUTE) as `protocol` says, then DEALLOCATE `name` (whatever came
    /// of it): the EXECUTE's outcome, or the PREPARE's error.
    pub async fn run_prepared(
        &mut self,
        protocol: Protocol,
        (name, prepare, execute): (&str, &str, &str),
    ) -> Outcome {
        let outcome = match protocol {
            Protocol::PreparedString => {
                let sql = format!("{prepare}; {execute}");
                self.exchange(&wire::query(&sql)).await
            }
            _ => match self.exchange(&wire::query(prepare)).await {
                Outcome::Rows(_) if protocol == Protocol::PreparedExtended => {
                    self.exchange(&extended(execute)).await
                }
                Outcome::Rows(_) => self.exchange(&wire::query(execute)).await,
                failed => failed,
            },
        };
        if let Outcome::Broken(_) = outcome {
            self.reconnect().await;
        } else {
            let deallocate = format!("DEALLOCATE {name}");
            if let Outcome::Broken(_) = self.exchange(&wire::query(&deallocate)).await {
                self.reconnect().await;
            }
        }
        outcome
    }

    async fn reconnect(&mut self) {
        self.wire = Wire::login(self.port, self.wire_user, &self.database).await;
        self.client = connect_str(&self.conninfo).await.unwrap();
    }

    /// `sql` as a cursor in a transaction, FETCHed `chunk` rows at a time
    /// until a FETCH returns fewer: its description, every row, and the
    /// FETCHes' tags joined; the first error, if one came (the
    /// transaction is then rolled back).
    /// `sql` inside a block that wrote [`BLOCK_WRITES`] first, rolled
    /// back after: its outcome (or the first write's error).
    async fn in_block(&mut self, sql: &str) -> Outcome {
        let mut outcome = self.exchange(&wire::query("BEGIN")).await;
        for write in BLOCK_WRITES {
            if let Outcome::Rows(_) = outcome {
                outcome = self.exchange(&wire::query(write)).await;
            }
        }
        if let Outcome::Rows(_) = outcome {
            outcome = self.exchange(&wire::query(sql)).await;
        }
        if let Outcome::Broken(_) = outcome {
            return outcome;
        }
        match self.exchange(&wire::query("ROLLBACK")).await {
            Outcome::Rows(_) => outcome,
            other => other,
        }
    }

    /// DECLARE a cursor over `sql` in a transaction, FETCH `chunk` rows
    /// at a time to the end (with `moves`, each FETCH followed by a MOVE of
    /// `chunk / 2 + 1` rows), COMMIT (ROLLBACK after an error).
    async fn cursor(&mut self, sql: &str, chunk: u32, moves: bool) -> Outcome {
        let script = [
            "BEGIN".to_owned(),
            format!("DECLARE pgshard_diff NO SCROLL CURSOR FOR {sql}"),
        ];
        let mut answer = Answer {
            columns: Vec::new(),
            rows: Vec::new(),
            tag: None,
        };
        let mut tags = Vec::new();
        let mut failed = None;
        for statement in &script {
            if let Outcome::Error { code, message } = self.exchange(&wire::query(statement)).await {
                failed = Some(Outcome::Error { code, message });
                break;
            }
        }
        while failed.is_none() {
            let fetch = format!("FETCH {chunk} FROM pgshard_diff");
            match self.exchange(&wire::query(&fetch)).await {
                Outcome::Rows(part) => {
                    let got = part.rows.len();
                    answer.columns = part.columns;
                    answer.rows.extend(part.rows);
                    tags.extend(part.tag);
                    if got < chunk as usize {
                        break;
                    }
                }
                other => failed = Some(other),
            }
            if moves && failed.is_none() {
                let skip = format!("MOVE {} IN pgshard_diff", chunk / 2 + 1);
                match self.exchange(&wire::query(&skip)).await {
                    Outcome::Rows(part) => tags.extend(part.tag),
                    other => failed = Some(other),
                }
            }
        }
        if let Some(Outcome::Broken(why)) = failed {
            return Outcome::Broken(why);
        }
        let end = if failed.is_some() {
            "ROLLBACK"
        } else {
            "COMMIT"
        };
        if let Outcome::Broken(why) = self.exchange(&wire::query(end)).await {
            return Outcome::Broken(why);
        }
        answer.tag = Some(tags.join(","));
        failed.unwrap_or(Outcome::Rows(answer))
    }

    /// Send `messages` and read up to ReadyForQuery.
    async fn exchange(&mut self, messages: &[u8]) -> Outcome {
        self.wire.send(messages).await;
        let mut answer = Answer {
            columns: Vec::new(),
            rows: Vec::new(),
            tag: None,
        };
        let mut error = None;
        loop {
            match self.wire.read_within(STATEMENT_TIMEOUT).await {
                Read::Message(b'T', body) => answer.columns = row_description(body),
                Read::Message(b'D', body) => answer.rows.push(data_row(body)),
                Read::Message(b'C', body) => answer.tag = Some(cstr(&mut body.clone())),
                Read::Message(b'E', body) => {
                    error.get_or_insert_with(|| error_fields(&body));
                }
                Read::Message(b'Z', _) => break,
                Read::Message(..) => {}
                Read::Closed => return Outcome::Broken("connection closed".to_owned()),
                Read::Silent => return Outcome::Broken("no answer in time".to_owned()),
            }
        }
        match error {
            Some((code, message)) => Outcome::Error { code, message },
            None => Outcome::Rows(answer),
        }
    }
}

/// Parse, Bind, Describe and Execute of the unnamed statement `sql`, and
/// Sync (text results).
fn extended(sql: &str) -> Vec<u8> {
    let messages = [
        wire::parse("", sql),
        wire::bind(""),
        wire::describe(b'P', ""),
        wire::execute(),
        wire::sync(),
    ];
    messages.concat()
}

/// `sql` bound to a portal in a transaction and read `chunk` rows per
/// Execute until one returns none: its rows in binary, and their count.
async fn portal(client: &mut Client, sql: &str, chunk: u32) -> Outcome {
    let result = async {
        let txn = client.transaction().await?;
        let statement = txn.prepare(sql).await?;
        let portal = txn.bind(&statement, &[]).await?;
        let mut rows = Vec::new();
        loop {
            let part = txn.query_portal(&portal, chunk as i32).await?;
            if part.is_empty() {
                break;
            }
            for row in part {
                let values = (0..row.len())
                    .map(|i| row.try_get::<_, Canonical>(i).map(|c| c.0))
                    .collect::<Result<Row, _>>()?;
                rows.push(values);
            }
        }
        txn.commit().await?;
        let columns = statement
            .columns()
            .iter()
            .map(|c| Column {
                name: c.name().to_owned(),
                type_oid: c.type_().oid(),
                type_modifier: None,
                format: None,
            })
            .collect();
        let tag = Some(format!("SELECT {}", rows.len()));
        Ok::<_, tokio_postgres::Error>(Answer { columns, rows, tag })
    };
    let result = result.await;
    outcome_of(client, result)
}

/// What a tokio-postgres read came to.
fn outcome_of(client: &Client, result: Result<Answer, tokio_postgres::Error>) -> Outcome {
    match result {
        Ok(answer) => Outcome::Rows(answer),
        Err(err) => match err.as_db_error() {
            Some(db) => Outcome::Error {
                code: db.code().code().to_owned(),
                message: db.message().to_owned(),
            },
            None if client.is_closed() => Outcome::Broken(describe(&err)),
            // A value that did not decode: a wrong answer, not a lost server.
            None => Outcome::Error {
                code: "client".to_owned(),
                message: describe(&err),
            },
        },
    }
}

/// Prepare `sql`, then read its rows in binary and its row count.
async fn binary(client: &Client, sql: &str) -> Outcome {
    let result = async {
        let statement = client.prepare(sql).await?;
        let stream = client
            .query_raw(&statement, std::iter::empty::<i32>())
            .await?;
        let mut stream = std::pin::pin!(stream);
        let mut rows = Vec::new();
        while let Some(row) = stream.try_next().await? {
            let values = (0..row.len())
                .map(|i| row.try_get::<_, Canonical>(i).map(|c| c.0))
                .collect::<Result<Row, _>>()?;
            rows.push(values);
        }
        let columns = statement
            .columns()
            .iter()
            .map(|c| Column {
                name: c.name().to_owned(),
                type_oid: c.type_().oid(),
                type_modifier: None,
                format: None,
            })
            .collect();
        let tag = stream.rows_affected().map(|n| format!("SELECT {n}"));
        Ok::<_, tokio_postgres::Error>(Answer { columns, rows, tag })
    };
    let result = result.await;
    outcome_of(client, result)
}

fn cstr(body: &mut Bytes) -> String {
    let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
    let text = String::from_utf8_lossy(&body[..end]).into_owned();
    body.advance((end + 1).min(body.len()));
    text
}

fn row_description(mut body: Bytes) -> Vec<Column> {
    let count = body.get_u16();
    (0..count)
        .map(|_| {
            let name = cstr(&mut body);
            let (_table, _attnum) = (body.get_u32(), body.get_i16());
            let type_oid = body.get_u32();
            let _typlen = body.get_i16();
            let type_modifier = Some(body.get_i32());
            let format = Some(body.get_i16());
            Column {
                name,
                type_oid,
                type_modifier,
                format,
            }
        })
        .collect()
}

fn data_row(mut body: Bytes) -> Row {
    let count = body.get_u16();
    (0..count)
        .map(|_| {
            let len = body.get_i32();
            (len >= 0).then(|| {
                let value = body.split_to(len as usize);
                String::from_utf8_lossy(&value).into_owned()
            })
        })
        .collect()
}

/// The SQLSTATE and message of an ErrorResponse.
fn error_fields(body: &Bytes) -> (String, String) {
    let field = |tag: u8| {
        body.split(|&b| b == 0)
            .find_map(|f| f.strip_prefix(&[tag]))
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    };
    (field(b'C'), field(b'M'))
}

/// A binary value as canonical text: what Postgres would print for the
/// types the generator uses, a tagged rendering for any other.
struct Canonical(Option<String>);

impl<'a> FromSql<'a> for Canonical {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let text = match *ty {
            Type::BOOL => if bool::from_sql(ty, raw)? { "t" } else { "f" }.to_owned(),
            Type::INT2 => i16::from_sql(ty, raw)?.to_string(),
            Type::INT4 => i32::from_sql(ty, raw)?.to_string(),
            Type::INT8 => i64::from_sql(ty, raw)?.to_string(),
            Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => String::from_sql(ty, raw)?,
            Type::FLOAT8 => format!("float8 {:?}", f64::from_sql(ty, raw)?),
            Type::DATE => date(i32::from_sql(&Type::INT4, raw)?),
            Type::NUMERIC => numeric(raw)?,
            _ => format!("{} {raw:02x?}", ty.name()),
        };
        Ok(Canonical(Some(text)))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Canonical(None))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// A binary date (days since 2000-01-01) as `YYYY-MM-DD`, the ISO DateStyle
/// (civil-from-days, H. Hinnant's algorithm).
fn date(days: i32) -> String {
    match days {
        i32::MAX => return "infinity".to_owned(),
        i32::MIN => return "-infinity".to_owned(),
        _ => {}
    }
    let z = i64::from(days) + 10_957 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// A binary numeric as Postgres prints it: base-10000 digits from `weight`
/// down, exactly `dscale` digits after the point.
fn numeric(raw: &[u8]) -> Result<String, Box<dyn std::error::Error + Sync + Send>> {
    let word = |i: usize| -> Result<u16, String> {
        raw.get(2 * i..2 * i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| format!("numeric of {} bytes", raw.len()))
    };
    let (ndigits, weight, sign, dscale) = (word(0)?, word(1)? as i16, word(2)?, word(3)?);
    let digit = |i: i64| -> Result<u16, String> {
        if (0..i64::from(ndigits)).contains(&i) {
            word(4 + i as usize)
        } else {
            Ok(0)
        }
    };
    let mut text = match sign {
        0xC000 => return Ok("NaN".to_owned()),
        0xD000 => return Ok("Infinity".to_owned()),
        0xF000 => return Ok("-Infinity".to_owned()),
        0x4000 => "-".to_owned(),
        _ => String::new(),
    };
    if weight < 0 {
        text.push('0');
    }
    for i in 0..=i64::from(weight) {
        let group = digit(i)?;
        text.push_str(&if i == 0 {
            group.to_string()
        } else {
            format!("{group:04}")
        });
    }
    if dscale > 0 {
        let mut fraction = String::new();
        let mut i = i64::from(weight) + 1;
        while fraction.len() < usize::from(dscale) {
            fraction.push_str(&format!("{:04}", digit(i)?));
            i += 1;
        }
        fraction.truncate(usize::from(dscale));
        text.push('.');
        text.push_str(&fraction);
    }
    Ok(text)
}
