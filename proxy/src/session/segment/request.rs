//! What each shard's part of a held segment is sent: its items, preceded
//! by the Parses its server lacks (the statement a SQL EXECUTE runs, named
//! statements, the client's unnamed one), an evicted statement closed
//! first where the server holds as many as it may, and a Flush.

use std::sync::Arc;

use bytes::BytesMut;

use super::{Item, Part, Unit, Uses};
use crate::conn::server::prepared_set;
use crate::protocol::frontend::Named;
use crate::protocol::messages;
use crate::session::reply_plan;
use crate::session::sql_prepared::SqlStatement;

/// A server that holds `limit` statements closes its least recently used
/// ones before it prepares another (a split INSERT prepares one statement
/// per shape of its parts' chunks), counting the `pending` ones this
/// request prepares already (they join its set as their ParseComplete is
/// read).
fn evict_oldest(part: &mut Part, limit: usize, pending: usize, out: &mut BytesMut) {
    while let Some(oldest) = part
        .server
        .conn
        .prepared
        .make_room(limit.saturating_sub(pending))
    {
        prepared_set::close(out, oldest);
        injected(part, reply_plan::CLOSE, false);
    }
}

/// Before a statement that EXECUTEs SQL-prepared statement `sql`: where
/// `part`'s server lacks it (and this request has not prepared it yet),
/// its PREPARE through the extended protocol, in the unnamed statement and
/// a portal of its own (closed after it), as `session/sql_extended.rs`
/// sends it. Whether it was added.
fn prepare_sql(
    part: &mut Part,
    sql: &SqlStatement,
    prepared: &[u64],
    limit: usize,
    out: &mut BytesMut,
) -> bool {
    if part.server.conn.prepared.contains(sql.id) || prepared.contains(&sql.id) {
        return false;
    }
    evict_oldest(part, limit, prepared.len(), out);
    const PORTAL: &[u8] = crate::session::sql_extended::PORTAL;
    messages::parse(out, b"", sql.prepare.as_bytes(), &[]);
    messages::bind_values(out, (PORTAL, b""), &[], &[], &[]);
    messages::execute(out, PORTAL);
    messages::close(out, Named::Portal, PORTAL);
    for (terminals, parse_of) in [
        (reply_plan::PARSE, None),
        (reply_plan::BIND, None),
        (reply_plan::EXECUTE, Some(sql.id)),
        (reply_plan::CLOSE, None),
    ] {
        part.units.push_back(Unit {
            item: None,
            terminals,
            parse_of,
            counted: false,
        });
    }
    true
}

/// The bytes of `part`'s share of the segment, ending with a Flush (and
/// starting with BEGIN when `begin`: the part's transaction then outlives
/// its Sync); fills `part.units` with the replies they are owed.
pub(super) fn build_request(
    part: &mut Part,
    items: &[Item],
    range: std::ops::Range<usize>,
    begin: bool,
    limit: usize,
) -> BytesMut {
    let mut out = BytesMut::new();
    let mut parsed = Parsed {
        named: Vec::new(),
        unnamed: part.unnamed_parsed,
    };
    if begin {
        messages::query(&mut out, "BEGIN");
        part.units.push_back(Unit {
            item: None,
            terminals: reply_plan::SYNC,
            parse_of: None,
            counted: false,
        });
    }
    let (from, to) = (range.start, range.end);
    for (index, item) in items.iter().enumerate().take(to).skip(from) {
        let Item::Send {
            shards,
            bytes,
            terminals,
            uses,
            parts,
            chunks,
            ..
        } = item
        else {
            continue;
        };
        if !shards.contains(&part.shard) {
            continue;
        }
        // A split Bind: this shard's own Bind of its own statement, its
        // first chunks bound before it.
        let (bytes, uses) = match parts {
            None => (bytes, uses.clone()),
            Some(parts) => match parts.iter().find(|p| p.shard == part.shard) {
                Some(own) => {
                    for chunk in &own.chunks {
                        let uses = Uses::Named(Arc::clone(&chunk.statement));
                        parse_uses(part, Some(&uses), &mut parsed, limit, &mut out);
                        out.extend_from_slice(&chunk.bytes);
                        injected(part, reply_plan::BIND, false);
                    }
                    (&own.bytes, Some(Uses::Named(Arc::clone(&own.statement))))
                }
                None => continue,
            },
        };
        // The Execute of a split portal bound in chunks: its chunks run
        // first, in row order, and close.
        let own_chunks = chunks
            .as_ref()
            .and_then(|c| c.iter().find(|(s, _)| *s == part.shard));
        for portal in own_chunks.map(|(_, p)| p.as_slice()).unwrap_or_default() {
            messages::execute(&mut out, portal);
            injected(part, reply_plan::EXECUTE, true);
            messages::close(&mut out, Named::Portal, portal);
            injected(part, reply_plan::CLOSE, false);
        }
        parse_uses(part, uses.as_ref(), &mut parsed, limit, &mut out);
        out.extend_from_slice(bytes);
        part.units.push_back(Unit {
            item: Some(index),
            terminals: *terminals,
            parse_of: None,
            counted: false,
        });
    }
    part.unnamed_parsed = parsed.unnamed;
    messages::flush(&mut out);
    out
}

/// A reply pgshard owes itself (`counted`: a chunk's Execute, whose count
/// joins the next item's tag).
fn injected(part: &mut Part, terminals: crate::protocol::backend::Kinds, counted: bool) {
    part.units.push_back(Unit {
        item: None,
        terminals,
        parse_of: None,
        counted,
    });
}

/// The statements `part` has had parsed while its request is built: named
/// ones by id, the unnamed one by generation.
struct Parsed {
    named: Vec<u64>,
    unnamed: Option<u64>,
}

/// Parse on `part`'s server what an item about to be sent uses and the
/// server lacks: the statement a SQL EXECUTE runs, its named statement,
/// or the client's unnamed one.
fn parse_uses(
    part: &mut Part,
    uses: Option<&Uses>,
    parsed: &mut Parsed,
    limit: usize,
    out: &mut BytesMut,
) {
    if let Some(Uses::Named(statement)) = uses {
        if let Some(sql) = statement.executes.get() {
            if prepare_sql(part, sql, &parsed.named, limit, out) {
                parsed.named.push(sql.id);
                parsed.unnamed = None;
            }
        }
    }
    match uses {
        Some(Uses::Named(statement))
            if !part.server.conn.prepared.contains(statement.id)
                && !parsed.named.contains(&statement.id) =>
        {
            evict_oldest(part, limit, parsed.named.len(), out);
            out.extend_from_slice(&statement.parse);
            parsed.named.push(statement.id);
            part.units.push_back(Unit {
                item: None,
                terminals: reply_plan::PARSE,
                parse_of: Some(statement.id),
                counted: false,
            });
        }
        Some(Uses::Unnamed(statement, generation)) if parsed.unnamed != Some(*generation) => {
            messages::parse(out, b"", &statement.query, &statement.param_types);
            parsed.unnamed = Some(*generation);
            part.units.push_back(Unit {
                item: None,
                terminals: reply_plan::PARSE,
                parse_of: None,
                counted: false,
            });
        }
        _ => {}
    }
}
