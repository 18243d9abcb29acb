//! The demo's shard move, printed as it happens: a keyed row of `orders`
//! written and read back (which database answered), `MOVE SHARD s TO n OF
//! orders` on the admin console (the logical shard of that row, to the
//! database it is not on), SHOW MOVES until the move is done, SHOW
//! PLACEMENT, and the same keyed read, now answered by the other database.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// The tenant whose logical shard moves.
const TENANT: i64 = 42;

/// Rows of `sql`'s answer, as (column, value) pairs.
async fn rows(client: &Client, sql: &str) -> anyhow::Result<Vec<Vec<(String, String)>>> {
    let answer = client
        .simple_query(sql)
        .await
        .with_context(|| sql.to_owned())?;
    Ok(answer
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                row.columns()
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let value = row.get(i).unwrap_or_default().to_owned();
                        (c.name().to_owned(), value)
                    })
                    .collect(),
            ),
            _ => None,
        })
        .collect())
}

fn get<'r>(row: &'r [(String, String)], column: &str) -> &'r str {
    row.iter()
        .find(|(c, _)| c == column)
        .map_or("", |(_, v)| v.as_str())
}

async fn connect(port: u16, user: &str, password: &str, database: &str) -> anyhow::Result<Client> {
    let conninfo =
        format!("host=127.0.0.1 port={port} user={user} password={password} dbname={database}");
    let (client, connection) = tokio_postgres::connect(&conninfo, NoTls)
        .await
        .with_context(|| format!("connecting to {database} through pgshard"))?;
    tokio::spawn(connection);
    Ok(client)
}

/// Which database answers the keyed read of [`TENANT`].
async fn keyed_read(app: &Client) -> anyhow::Result<String> {
    let sql = format!(
        "SELECT count(*) AS orders, current_database() AS answered_by \
         FROM orders WHERE tenant_id = {TENANT}"
    );
    let answer = rows(app, &sql).await?;
    let row = answer.first().context("no answer to the keyed read")?;
    let (count, database) = (get(row, "orders"), get(row, "answered_by"));
    println!("  {sql}\n    -> {count} orders of tenant {TENANT}, answered by {database}");
    Ok(database.to_owned())
}

/// Move the logical shard of [`TENANT`] to the other database, printing
/// each step.
pub async fn run(port: u16, user: &str, password: &str) -> anyhow::Result<()> {
    let app = connect(port, user, password, super::SHARDED).await?;
    let admin = connect(port, "admin", "admin", "admin").await?;
    let insert =
        format!("INSERT INTO orders (tenant_id, item) VALUES ({TENANT}, 'moved with its shard')");
    app.simple_query(&insert)
        .await
        .context("the keyed insert")?;
    println!("\nA logical shard moves online (issue 33; docs/resharding.md):");
    println!("  {insert}");
    let before = keyed_read(&app).await?;
    // Where the logical shard of the tenant is now (a move of an earlier
    // run may have put it on either database).
    let placement = rows(&admin, "SHOW PLACEMENT").await?;
    let shard = router_shard(TENANT);
    let on = placement
        .iter()
        .find(|r| {
            get(r, "group").ends_with(&format!("/{}", super::SHARD_COUNT))
                && get(r, "shard") == shard.to_string()
        })
        .map(|r| get(r, "placed_on").to_owned())
        .context("SHOW PLACEMENT lists no logical shard of orders")?;
    let target = usize::from(on == "0");
    let command = format!("MOVE SHARD {shard} TO {target} OF orders");
    let id = rows(&admin, &command).await?;
    let id = id
        .first()
        .map(|r| get(r, "id").to_owned())
        .unwrap_or_default();
    println!("  admin> {command}\n    -> move {id}: logical shard {shard} (tenant {TENANT}) from database {on} to {target}");
    println!("  admin> SHOW MOVES (until done)");
    let begun = Instant::now();
    let mut last = String::new();
    loop {
        let moves = rows(&admin, "SHOW MOVES").await?;
        let Some(m) = moves.iter().find(|r| get(r, "id") == id) else {
            bail!("SHOW MOVES does not list move {id}");
        };
        let step = get(m, "step");
        if step != last {
            let waited = match get(m, "max_wait_ms") {
                "" => String::new(),
                ms => format!("  statements held {ms} ms"),
            };
            println!(
                "    {step:<9} rows_copied {:<4} elapsed {:>6} ms{waited} {}",
                get(m, "rows_copied"),
                get(m, "elapsed_ms"),
                get(m, "error")
            );
            last = step.to_owned();
        }
        match step {
            "done" => break,
            "failed" => bail!("move {id} failed: {}", get(m, "error")),
            _ if begun.elapsed() > Duration::from_secs(120) => bail!("move {id} takes too long"),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    println!("  admin> SHOW PLACEMENT (orders)");
    for r in rows(&admin, "SHOW PLACEMENT").await? {
        if get(&r, "group").ends_with(&format!("/{}", super::SHARD_COUNT)) {
            println!(
                "    logical shard {} on database {} ({})",
                get(&r, "shard"),
                get(&r, "placed_on"),
                get(&r, "from")
            );
        }
    }
    let after = keyed_read(&app).await?;
    if after == before {
        bail!("the keyed read is still answered by {before}");
    }
    println!("The shard moved while pgshard served; Ctrl-C stops the demo.\n");
    Ok(())
}

/// The logical shard of `tenant` in `orders` (bigint, postgres hasher).
fn router_shard(tenant: i64) -> usize {
    use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};
    let keys = KeySpace {
        data_type: DataType::BigInt,
        function: ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count: super::SHARD_COUNT,
        },
        placement: vec![0; super::SHARD_COUNT],
        moving: None,
    };
    router::hash::logical_shard(&keys, &Key::Int(tenant)).unwrap_or(0)
}
