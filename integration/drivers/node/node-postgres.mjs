// node-postgres (`pg`, `pg-cursor`, `pg-copy-streams`) against pgshard.
//
// What node-postgres does on the wire: simple Query for statements without
// parameters; unnamed Parse/Bind/Describe/Execute/Sync for parameters; named
// statements (Parse once per connection, then Bind only) with `{name}`;
// `pipeline: true` writes queries back to back, each with its own Sync;
// pg-cursor binds a named portal and reads it with Execute(n)+Flush;
// pg-copy-streams speaks COPY FROM STDIN / TO STDOUT; `Client#cancel` sends a
// CancelRequest on a new connection.
//
// Checks (each expects what the driver gets from Postgres itself; mode
// `sharded` uses drv_items, sharded by id, for rows, and keeps to statements
// pgshard can route):
//   simple_and_extended     simple and extended queries, parameter types, binary results
//   unnamed_across_ddl      unnamed statements across DROP/CREATE with a new column type
//   named_across_ddl        a named statement across the same DDL: Postgres' own
//                           "cached plan must not change result type" (or the new
//                           type), never a stale type or a pgshard statement error
//   named_many_clients      the same statement names on many clients (more than server
//                           connections in transaction pooling)
//   large_param_count       32768 and 65535 bind parameters
//   pipeline_mode           50 pipelined queries (table-less and keyed), one failing
//   cursor                  pg-cursor read(10) loops in and outside a transaction
//                           (sharded: keyed and table-less ones; one over every
//                           shard is refused with 0A000, not supported yet)
//   copy                    COPY FROM STDIN / TO STDOUT round trip (sharded: keyed
//                           COPY TO, COPY FROM refused cleanly or right)
//   tx_error                BEGIN; error; next statement 25P02; ROLLBACK recovers;
//                           ReadyForQuery status bytes I/T/E
//   savepoint               SAVEPOINT / ROLLBACK TO inside a transaction
//   keyed_round_trips       INSERT/SELECT/UPDATE/DELETE by key with parameters
//   fanout_error_recovery   a failing keyless statement, then the same one working
//   empty_query             empty and comment-only statements (simple and extended)
//   session_settings        SET / SET LOCAL / RESET per client, interleaved clients
//   begin_options           BEGIN ISOLATION LEVEL / READ ONLY reach the server
//   large_values            multi-MiB text and bytea parameters, a 1 MiB literal
//   auth_errors             wrong password, unknown user or database: Postgres' codes
//   abandoned_sessions      clients vanishing mid-transaction / with an open portal
//                           leave nothing behind for the next clients
//   listen_notify           LISTEN / NOTIFY (not in mode columns), a rolled-back NOTIFY never sent
//   cancel                  Client#cancel (CancelRequest) on pg_sleep: 57014
//   statement_timeout       statement_timeout as a startup parameter: 57014
//   pool_concurrency        pg.Pool of 32 (session: pool size) running 200 transactions
//   admin_show_pools        SHOW POOLS / SHOW CLIENTS counters are sane (run last)
//
// Mode `columns` (two shards, only a column-only entry on `id`, no table): the
// application's own tables, created and written at once by the creating
// client and by another one connected before, rows read back from each shard:
//   columns_create_insert   a table with id (sharded) and one without (copies):
//                           simple, unnamed and named INSERTs
//   columns_create_copy     pg-copy-streams COPY FROM STDIN, with and without a
//                           column list, and CSV
//   columns_add_column      ALTER TABLE ADD COLUMN, then INSERTs and COPY of it
//   columns_in_transaction  all of it inside BEGIN ... COMMIT
//   columns_add_key_refused ADD COLUMN id on a table without it: 0A000

import pg from 'pg'
import Cursor from 'pg-cursor'
import copyStreams from 'pg-copy-streams'
import { pipeline } from 'node:stream/promises'
import { Readable, Writable } from 'node:stream'
import { env, check, run, assert, eq, expectCode, expectRefused, must, sleep, withTimeout, describe, ids } from './lib.mjs'
import { shards, expectSharded, expectCopies } from './lib.mjs'

const DRIVER = 'node-postgres'
const tbl = (name) => `drv_pg_${name}`
// drv_items ids of this driver (other drivers use other ranges).
const ID_BASE = 1_100_000

function config(extra = {}) {
  return {
    host: env.host,
    port: env.port,
    user: env.user,
    password: env.password,
    database: env.database,
    connectionTimeoutMillis: 8000,
    ...extra,
  }
}

// Clients a check drops on purpose: their connection errors are expected.
const quiet = new WeakSet()

/** A connected pg.Client that the check's end closes (or destroys). */
async function connect(t, extra = {}) {
  const client = new pg.Client(config(extra))
  client.on('error', (e) => quiet.has(client) || console.error(`# ${DRIVER}: client error: ${describe(e)}`))
  t.onClose(
    () => client.end(),
    () => client.connection.stream.destroy(),
  )
  await must(client.connect(), 'connect')
  return client
}

function pool(t, extra = {}) {
  const p = new pg.Pool(config(extra))
  const clients = new Set()
  p.on('connect', (c) => clients.add(c))
  p.on('error', (e) => console.error(`# ${DRIVER}: idle pool client error: ${describe(e)}`))
  t.onClose(
    () => p.end(),
    () => {
      for (const c of clients) c.connection.stream.destroy()
    },
  )
  return p
}

const q = (client, text, values, what) => must(client.query(text, values), what ?? text)

async function dropLater(t, client, table) {
  await q(client, `DROP TABLE IF EXISTS ${table}`)
  t.defer(() => client.query(`DROP TABLE IF EXISTS ${table}`))
}

async function deleteIdsLater(t, client, first, n) {
  const del = () => client.query('DELETE FROM drv_items WHERE id = ANY($1::bigint[])', [ids(first, n)])
  await must(del(), 'delete old rows')
  t.defer(del)
}

// ---------------------------------------------------------------------------

check('simple_and_extended', async (t) => {
  const c = await connect(t)
  eq((await q(c, 'SELECT 1 AS x')).rows, [{ x: 1 }], 'simple SELECT 1')
  const multi = await q(c, 'SELECT 1 AS a; SELECT 2 AS b')
  eq(
    multi.map((r) => r.rows),
    [[{ a: 1 }], [{ b: 2 }]],
    'two statements in one simple query',
  )
  const r = await q(
    c,
    'SELECT $1::int AS i, $2::bigint AS b, $3::text AS s, $4::text AS n, $5::bool AS t, ' +
      '$6::timestamptz AS ts, $7::bytea AS by, $8::jsonb AS j, $9::int[] AS a',
    [41, '9007199254740993', 'héllo', null, true, new Date('2024-02-29T12:34:56.789Z'), Buffer.from([0, 1, 255]), { k: [1, 'x'] }, [1, 2, 3]],
    'extended query with nine parameter types',
  )
  const row = r.rows[0]
  eq(
    [row.i, row.b, row.s, row.n, row.t, row.ts.toISOString(), [...row.by], row.j, row.a],
    [41, '9007199254740993', 'héllo', null, true, '2024-02-29T12:34:56.789Z', [0, 1, 255], { k: [1, 'x'] }, [1, 2, 3]],
    'parameter round trip',
  )
  // Binary result format.
  const bin = await connect(t, { binary: true })
  // (With binary: true pg also sends parameters as binary, and its binary
  // int8/float8 decoders are off: int4, text and bool only.)
  const rb = await q(bin, 'SELECT 7::int AS i, $1::text AS s, false AS t', ['bin'], 'binary results')
  eq(rb.rows, [{ i: 7, s: 'bin', t: false }], 'binary results')
  const ver = await q(c, 'SHOW server_version_num')
  assert(Number(ver.rows[0].server_version_num) >= 100000, `server_version_num ${ver.rows[0].server_version_num}`)
})

check('unnamed_across_ddl', async (t) => {
  const c = await connect(t)
  const table = tbl('ddl')
  await dropLater(t, c, table)
  const text = `SELECT v FROM ${table} WHERE id = $1`
  await q(c, `CREATE TABLE ${table} (id int, v timestamptz)`)
  if (!env.sharded) await q(c, `INSERT INTO ${table} VALUES (1, '2024-01-02T03:04:05Z')`)
  const r1 = await q(c, text, [1], 'query before DDL')
  eq(r1.fields.map((f) => f.dataTypeID), [1184], 'result type before DDL (timestamptz)')
  if (!env.sharded) eq(r1.rows[0].v.toISOString(), '2024-01-02T03:04:05.000Z', 'value before DDL')
  await q(c, `DROP TABLE ${table}`)
  await q(c, `CREATE TABLE ${table} (id int, v int)`)
  if (!env.sharded) await q(c, `INSERT INTO ${table} VALUES (1, 7)`)
  for (let i = 0; i < 2; i++) {
    const r2 = await q(c, text, [1], `query after DDL (run ${i + 1})`)
    eq(r2.fields.map((f) => f.dataTypeID), [23], 'result type after DDL (int4)')
    if (!env.sharded) eq(r2.rows, [{ v: 7 }], 'rows after DDL')
  }
})

check('named_across_ddl', async (t) => {
  const c = await connect(t)
  const table = tbl('ddl_named')
  await dropLater(t, c, table)
  const text = `SELECT v FROM ${table} WHERE id = $1`
  await q(c, `CREATE TABLE ${table} (id int, v timestamptz)`)
  const named = { name: 'drv_pg_named_ddl', text, values: [1] }
  for (let i = 0; i < 2; i++) {
    const r1 = await q(c, named, undefined, `named query before DDL (run ${i + 1})`)
    eq(r1.fields.map((f) => f.dataTypeID), [1184], 'result type before DDL (timestamptz)')
  }
  await q(c, `DROP TABLE ${table}`)
  await q(c, `CREATE TABLE ${table} (id int, v int)`)
  // Postgres answers the stale named statement with 0A000 "cached plan must
  // not change result type"; a pooler that re-prepares it may instead give
  // the new type. Anything else (a stale type, 42804, 26000, 42P05) is wrong.
  try {
    const r = await c.query(named)
    eq(r.fields.map((f) => f.dataTypeID), [23], 'named statement after DDL: result type')
  } catch (e) {
    assert(
      e.code === '0A000' && /cached plan must not change result type/.test(e.message),
      `named statement after DDL: want 0A000 "cached plan must not change result type" (as Postgres), got ${describe(e)}`,
    )
  }
  const r3 = await q(c, { name: 'drv_pg_named_ddl2', text, values: [1] }, undefined, 'new name after DDL')
  eq(r3.fields.map((f) => f.dataTypeID), [23], 'new name after DDL: result type')
  eq((await q(c, 'SELECT 1 AS x')).rows, [{ x: 1 }], 'connection still works')
})

check('named_many_clients', async (t) => {
  // Session pooling holds a server connection per client: there, only as
  // many clients as server connections.
  const n = env.mode === 'session' ? env.poolSize : 3 * env.poolSize
  const clients = []
  for (let i = 0; i < n; i++) clients.push(await connect(t))
  await Promise.all(
    clients.map(async (c, ci) => {
      for (let k = 0; k < 10; k++) {
        const v = ci * 100 + k
        const r = await q(c, { name: 'drv_pg_same', text: 'SELECT $1::int * 2 AS v', values: [v] }, undefined, 'named statement')
        eq(r.rows, [{ v: 2 * v }], `client ${ci} run ${k}`)
        const r2 = await q(c, { name: 'drv_pg_other', text: 'SELECT $1::text || $2::text AS s', values: ['a', String(v)] }, undefined, 'second named statement')
        eq(r2.rows, [{ s: `a${v}` }], `client ${ci} run ${k} (second statement)`)
      }
    }),
  )
})

check('large_param_count', async (t) => {
  const c = await connect(t)
  for (const n of [32767, 32768, 65535]) {
    const text = `SELECT cardinality(ARRAY[${Array.from({ length: n }, (_, i) => `$${i + 1}::int`).join(',')}]) AS n`
    const values = Array.from({ length: n }, (_, i) => i)
    const r = await q(c, text, values, `${n} parameters`)
    eq(r.rows, [{ n }], `${n} parameters`)
  }
  eq((await q(c, 'SELECT 1 AS x')).rows, [{ x: 1 }], 'connection still works')
})

check('pipeline_mode', async (t) => {
  const c = await connect(t, { pipeline: true })
  const bad = 25
  const first = ID_BASE + 50
  await deleteIdsLater(t, c, first, 50)
  await Promise.all(ids(first, 50).map((id) => q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id, `v${id}`])))
  for (let round = 0; round < 2; round++) {
    // Keyed statements (one shard each), one failing.
    const results = await Promise.allSettled(
      ids(first, 50).map((id, i) =>
        i === bad
          ? c.query('SELECT val, 1/0 AS z FROM drv_items WHERE id = $1', [id])
          : i % 2
            ? c.query({ name: 'drv_pg_pipe_keyed', text: 'SELECT val FROM drv_items WHERE id = $1', values: [id] })
            : c.query(`SELECT val FROM drv_items WHERE id = ${id}`),
      ),
    )
    results.forEach((r, i) => {
      if (i === bad) {
        assert(r.status === 'rejected' && r.reason.code === '22012', `keyed round ${round + 1}, query ${i}: want 22012, got ${r.status === 'rejected' ? describe(r.reason) : 'success'}`)
      } else {
        assert(r.status === 'fulfilled', `keyed round ${round + 1}, query ${i}: ${r.status === 'rejected' ? describe(r.reason) : ''}`)
        eq(r.value.rows, [{ val: `v${first + i}` }], `keyed round ${round + 1}, query ${i}`)
      }
    })
  }
  for (let round = 0; round < 2; round++) {
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        i === bad
          ? c.query('SELECT $1::int / 0 AS i', [i])
          : i % 2
            ? c.query({ name: 'drv_pg_pipe', text: 'SELECT $1::int AS i', values: [i] })
            : c.query('SELECT $1::int AS i', [i]),
      ),
    )
    results.forEach((r, i) => {
      if (i === bad) {
        assert(r.status === 'rejected' && r.reason.code === '22012', `round ${round + 1}, query ${i}: want 22012, got ${r.status === 'rejected' ? describe(r.reason) : 'success'}`)
      } else {
        assert(r.status === 'fulfilled', `round ${round + 1}, query ${i}: ${r.status === 'rejected' ? describe(r.reason) : ''}`)
        eq(r.value.rows, [{ i }], `round ${round + 1}, query ${i}`)
      }
    })
  }
})

async function readAll(cursor, batch) {
  const rows = []
  let reads = 0
  for (;;) {
    const got = await cursor.read(batch)
    reads++
    if (got.length === 0) break
    assert(got.length <= batch, `read(${batch}) returned ${got.length} rows`)
    rows.push(...got)
    if (reads > 10000) throw new Error('cursor never ends')
  }
  await cursor.close()
  return rows
}

check('cursor', async (t) => {
  const c = await connect(t)
  const series = Array.from({ length: 1000 }, (_, i) => i + 1)
  const gs = 'SELECT g FROM generate_series(1, $1::int) g'
  // Outside a transaction: the portal lives until Sync.
  eq((await readAll(c.query(new Cursor(gs, [1000])), 10)).map((r) => r.g), series, 'cursor outside a transaction')
  eq((await q(c, 'SELECT 1 AS x')).rows, [{ x: 1 }], 'query after the cursor')

  const first = ID_BASE + 100
  await deleteIdsLater(t, c, first, 100)
  for (const id of ids(first, 100)) await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id, `c${id}`])

  await q(c, 'BEGIN')
  if (env.sharded) {
    // A transaction stays on the shard of its first keyed statement.
    const keyed = 'SELECT g FROM drv_items d, generate_series(1, 1000) g WHERE d.id = $1 ORDER BY g'
    eq((await q(c, 'SELECT val FROM drv_items WHERE id = $1', [first])).rows, [{ val: `c${first}` }], 'keyed select in transaction')
    eq((await readAll(c.query(new Cursor(keyed, [first])), 10)).map((r) => r.g), series, 'keyed cursor in a transaction')
    eq((await readAll(c.query(new Cursor(keyed, [first])), 7)).map((r) => r.g), series, 'second keyed cursor in the same transaction')
  } else {
    eq((await readAll(c.query(new Cursor(gs, [1000])), 10)).map((r) => r.g), series, 'cursor in a transaction')
    eq((await readAll(c.query(new Cursor(gs, [1000])), 7)).map((r) => r.g), series, 'second cursor in the same transaction')
  }
  await q(c, 'COMMIT')

  // A read over every shard (id range: keyless in sharded mode).
  const range = 'SELECT id, val FROM drv_items WHERE id >= $1 AND id < $2'
  if (env.sharded) {
    // A cursor (Execute(n) + Flush, no Sync) over every shard is not supported
    // yet: pgshard refuses it with 0A000 at once instead of hanging, and the
    // client (pg-cursor sends Sync on the error) works afterwards.
    await expectRefused(readAll(c.query(new Cursor(range, [first, first + 100])), 10), 'cursor over an id range (every shard)')
  } else {
    const rows = await readAll(c.query(new Cursor(range, [first, first + 100])), 10)
    eq(
      rows.map((r) => Number(r.id)).sort((a, b) => a - b),
      ids(first, 100),
      'cursor over an id range (every shard)',
    )
  }
  eq((await withTimeout(q(c, 'SELECT 1 AS x'), 5000, 'query after the cursors')).rows, [{ x: 1 }], 'query after the cursors')
})

const copyText = (rows) => rows.map((r) => r.join('\t') + '\n').join('')

async function copyIn(c, sql, text) {
  const stream = c.query(copyStreams.from(sql))
  await pipeline(Readable.from([Buffer.from(text)]), stream)
  return stream.rowCount
}

async function copyOut(c, sql) {
  const chunks = []
  await pipeline(
    c.query(copyStreams.to(sql)),
    new Writable({
      write(chunk, _enc, cb) {
        chunks.push(chunk)
        cb()
      },
    }),
  )
  return Buffer.concat(chunks).toString()
}

check('copy', async (t) => {
  const c = await connect(t)
  if (!env.sharded) {
    const table = tbl('copy')
    await dropLater(t, c, table)
    await q(c, `CREATE TABLE ${table} (id int PRIMARY KEY, val text)`)
    const rows = Array.from({ length: 1000 }, (_, i) => [i, `row ${i}`])
    const n = await must(copyIn(c, `COPY ${table} (id, val) FROM STDIN`, copyText(rows)), 'COPY FROM STDIN')
    eq(n, 1000, 'COPY FROM STDIN row count')
    const out = await must(copyOut(c, `COPY (SELECT id, val FROM ${table} ORDER BY id) TO STDOUT`), 'COPY TO STDOUT')
    eq(out, copyText(rows), 'COPY TO STDOUT text')
    // A failing COPY FROM (duplicate key) leaves the connection usable.
    await expectCode(copyIn(c, `COPY ${table} (id, val) FROM STDIN`, copyText([[1, 'dup']])), '23505', 'COPY FROM with a duplicate key')
    eq((await q(c, `SELECT count(*)::int AS n FROM ${table}`)).rows, [{ n: 1000 }], 'rows after the failed COPY')
    return
  }
  const first = ID_BASE + 300
  await deleteIdsLater(t, c, first, 10)
  await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [first, 'copy me'])
  const out = await must(copyOut(c, `COPY (SELECT id, val FROM drv_items WHERE id = ${first}) TO STDOUT`), 'keyed COPY TO STDOUT')
  eq(out, `${first}\tcopy me\n`, 'keyed COPY TO STDOUT text')
  // COPY FROM into the sharded table: rows in the right shards, or a clean refusal.
  const rows = ids(first + 1, 9).map((id) => [id, `copied ${id}`])
  let copied = false
  try {
    eq(await copyIn(c, 'COPY drv_items (id, val) FROM STDIN', copyText(rows)), 9, 'COPY FROM row count')
    copied = true
  } catch (e) {
    assert(e.code && /^[0-9A-Z]{5}$/.test(e.code), `COPY FROM into drv_items failed without a server error: ${describe(e)}`)
  }
  eq((await q(c, 'SELECT 1 AS x')).rows, [{ x: 1 }], `connection after COPY FROM (${copied ? 'accepted' : 'refused'})`)
  if (copied) {
    for (const [id, val] of rows) eq((await q(c, 'SELECT val FROM drv_items WHERE id = $1', [id])).rows, [{ val }], `copied row ${id}`)
  }
})

check('tx_error', async (t) => {
  const c = await connect(t)
  const variants = [[]]
  if (env.sharded) {
    const id = ID_BASE + 400
    await deleteIdsLater(t, c, id, 1)
    await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id, 'tx'])
    variants.push([['SELECT val FROM drv_items WHERE id = $1', [id]]])
  }
  for (const before of variants) {
    const how = before.length ? ' (after a keyed statement)' : ''
    // ReadyForQuery's status byte: drivers and pools rely on it.
    // (pg rejects a query at its ErrorResponse: wait for the ReadyForQuery.)
    const status = async (want, when) => {
      for (let i = 0; i < 200 && !c.readyForQuery; i++) await sleep(5)
      eq(c.getTransactionStatus(), want, `transaction status ${when}${how}`)
    }
    await status('I', 'before BEGIN')
    await q(c, 'BEGIN')
    await status('T', 'after BEGIN')
    for (const [text, values] of before) await q(c, text, values)
    await expectCode(c.query('SELECT 1/0'), '22012', `SELECT 1/0 in a transaction${how}`)
    await status('E', 'after the error')
    await expectCode(c.query('SELECT 1'), '25P02', `simple SELECT 1 after the error${how}`)
    await expectCode(c.query('SELECT $1::int', [1]), '25P02', `extended SELECT $1 after the error${how}`)
    await status('E', 'after 25P02')
    await q(c, 'ROLLBACK')
    await status('I', 'after ROLLBACK')
    eq((await q(c, 'SELECT 1 AS x')).rows, [{ x: 1 }], `SELECT 1 after ROLLBACK${how}`)
  }
  // The same with extended-protocol statements only.
  await q(c, 'BEGIN')
  await expectCode(c.query('SELECT $1::int / 0', [1]), '22012', 'extended division by zero in a transaction')
  await expectCode(c.query('SELECT $1::int', [1]), '25P02', 'extended statement after the error')
  await q(c, 'ROLLBACK')
  eq((await q(c, 'SELECT $1::int AS x', [5])).rows, [{ x: 5 }], 'extended statement after ROLLBACK')
})

check('savepoint', async (t) => {
  const c = await connect(t)
  let ins, sel
  if (env.sharded) {
    const id = ID_BASE + 500
    await deleteIdsLater(t, c, id, 1)
    await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id, 'start'])
    // Everything keyed by the same id: one shard for the whole transaction.
    ins = (v) => q(c, 'UPDATE drv_items SET val = val || $2 WHERE id = $1', [id, v])
    sel = async () => (await q(c, 'SELECT val FROM drv_items WHERE id = $1', [id])).rows[0].val
  } else {
    const table = tbl('sp')
    await dropLater(t, c, table)
    await q(c, `CREATE TABLE ${table} (id int PRIMARY KEY, val text)`)
    await q(c, `INSERT INTO ${table} VALUES (1, 'start')`)
    ins = (v) => q(c, `UPDATE ${table} SET val = val || $1 WHERE id = 1`, [v])
    sel = async () => (await q(c, `SELECT val FROM ${table} WHERE id = 1`)).rows[0].val
  }
  await q(c, 'BEGIN')
  await ins(' a')
  await q(c, 'SAVEPOINT s1')
  await ins(' b')
  await expectCode(c.query('SELECT 1/0'), '22012', 'error inside the savepoint')
  await expectCode(c.query('SELECT 1'), '25P02', 'statement after the error inside the savepoint')
  await q(c, 'ROLLBACK TO SAVEPOINT s1')
  await ins(' c')
  await q(c, 'SAVEPOINT s2')
  await ins(' d')
  await q(c, 'RELEASE SAVEPOINT s2')
  eq(await sel(), 'start a c d', 'value inside the transaction')
  await q(c, 'COMMIT')
  eq(await sel(), 'start a c d', 'value after COMMIT')
})

check('keyed_round_trips', async (t) => {
  const c = await connect(t)
  const first = ID_BASE + 600
  const n = 40
  await deleteIdsLater(t, c, first, n)
  for (const id of ids(first, n)) {
    const r = await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2) RETURNING id, val', [id, `v${id}`])
    eq(r.rows, [{ id: String(id), val: `v${id}` }], `INSERT ... RETURNING ${id}`)
  }
  for (const id of ids(first, n)) {
    eq((await q(c, 'SELECT val FROM drv_items WHERE id = $1', [id])).rows, [{ val: `v${id}` }], `SELECT ${id}`)
    eq((await q(c, { name: 'drv_pg_keyed', text: 'SELECT val FROM drv_items WHERE id = $1', values: [id] })).rows, [{ val: `v${id}` }], `named SELECT ${id}`)
    const u = await q(c, 'UPDATE drv_items SET val = $2 WHERE id = $1', [id, `u${id}`])
    eq(u.rowCount, 1, `UPDATE ${id} row count`)
  }
  // Literal keys (simple protocol) and a key list.
  eq((await q(c, `SELECT val FROM drv_items WHERE id = ${first}`)).rows, [{ val: `u${first}` }], 'simple keyed SELECT')
  const some = [first, first + 1, first + 2, first + 3]
  const r = await q(c, 'SELECT id, val FROM drv_items WHERE id = ANY($1::bigint[])', [some])
  eq(r.rows.map((x) => Number(x.id)).sort((a, b) => a - b), some, 'SELECT id = ANY(keys)')
  const all = await q(c, 'SELECT count(*)::int AS n FROM drv_items WHERE id >= $1 AND id < $2', [first, first + n])
  eq(all.rows.reduce((s, x) => s + x.n, 0), n, 'rows over an id range (summed over shards)')
  for (const id of ids(first, n)) eq((await q(c, 'DELETE FROM drv_items WHERE id = $1', [id])).rowCount, 1, `DELETE ${id}`)
})

check('fanout_error_recovery', async (t) => {
  const c = await connect(t)
  const id = ID_BASE + 700
  await deleteIdsLater(t, c, id, 1)
  await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id, '0'])
  const text = 'SELECT id FROM drv_items WHERE val = (1 / $1)::text AND id >= $2 AND id < $3'
  const args = (d) => [d, ID_BASE + 700, ID_BASE + 800]
  for (let i = 0; i < 3; i++) {
    await expectCode(c.query(text, args(0)), '22012', `unnamed, divisor 0 (run ${i + 1})`)
    eq((await q(c, text, args(2), `unnamed, divisor 2 (run ${i + 1})`)).rows, [{ id: String(id) }], `unnamed, divisor 2 (run ${i + 1})`)
    await expectCode(c.query({ name: 'drv_pg_fanout', text, values: args(0) }), '22012', `named, divisor 0 (run ${i + 1})`)
    eq((await q(c, { name: 'drv_pg_fanout', text, values: args(2) }, undefined, `named, divisor 2 (run ${i + 1})`)).rows, [{ id: String(id) }], `named, divisor 2 (run ${i + 1})`)
  }
  const c2 = await connect(t)
  eq((await q(c2, text, args(2), 'new connection, divisor 2')).rows, [{ id: String(id) }], 'new connection, divisor 2')
})

check('empty_query', async (t) => {
  const c = await connect(t)
  for (const text of ['', ';', '-- only a comment', '  ']) {
    const r = await q(c, text, undefined, `simple ${JSON.stringify(text)}`)
    eq([r.command, r.rows], [null, []], `simple ${JSON.stringify(text)}`)
  }
  const r = await q(c, { text: '', values: [] }, undefined, 'extended empty statement')
  eq([r.command, r.rows], [null, []], 'extended empty statement')
  eq((await q(c, 'SELECT 1 AS x')).rows, [{ x: 1 }], 'SELECT 1 after empty queries')
})

check('session_settings', async (t) => {
  // Two clients with their own settings, interleaved: in transaction pooling
  // each statement may run on any server connection.
  const a = await connect(t, { application_name: 'drv_pg_a' })
  const b = await connect(t, { application_name: 'drv_pg_b' })
  await q(a, "SET TimeZone = 'Asia/Tokyo'")
  await q(b, "SET TimeZone = 'America/New_York'")
  // A SET as a named (extended-protocol) statement counts like a simple one.
  await q(b, { name: 'drv_pg_set_path', text: 'SET search_path = pg_catalog, public' })
  const ts = "SELECT '2024-01-01 00:00:00+00'::timestamptz::text AS t, current_setting('application_name') AS app"
  for (let i = 0; i < 5; i++) {
    eq((await q(a, 'SHOW TimeZone')).rows, [{ TimeZone: 'Asia/Tokyo' }], `client a SHOW TimeZone (${i + 1})`)
    eq((await q(b, 'SHOW TimeZone')).rows, [{ TimeZone: 'America/New_York' }], `client b SHOW TimeZone (${i + 1})`)
    eq((await q(a, ts)).rows, [{ t: '2024-01-01 09:00:00+09', app: 'drv_pg_a' }], `client a timestamptz text (${i + 1})`)
    eq((await q(b, { name: 'drv_pg_ts', text: ts + ', $1::int AS i', values: [i] })).rows, [{ t: '2023-12-31 19:00:00-05', app: 'drv_pg_b', i }], `client b named statement (${i + 1})`)
    eq((await q(b, 'SHOW search_path')).rows, [{ search_path: 'pg_catalog, public' }], `client b search_path (${i + 1})`)
  }
  // SET LOCAL ends with the transaction; RESET goes back to the session's start value.
  const before = (await q(b, 'SHOW application_name')).rows
  await q(a, 'BEGIN')
  if (env.sharded) await q(a, 'SELECT val FROM drv_items WHERE id = $1', [ID_BASE + 800])
  await q(a, "SET LOCAL TimeZone = 'UTC'")
  eq((await q(a, 'SHOW TimeZone')).rows, [{ TimeZone: 'UTC' }], 'SET LOCAL inside the transaction')
  await q(a, 'COMMIT')
  eq((await q(a, 'SHOW TimeZone')).rows, [{ TimeZone: 'Asia/Tokyo' }], 'TimeZone after the SET LOCAL transaction')
  await q(a, 'SET application_name = DEFAULT')
  await q(a, 'RESET TimeZone')
  const fresh = await connect(t)
  const tzDefault = (await q(fresh, 'SHOW TimeZone')).rows
  eq((await q(a, 'SHOW TimeZone')).rows, tzDefault, 'TimeZone after RESET (the default)')
  eq((await q(a, 'SHOW application_name')).rows, [{ application_name: 'drv_pg_a' }], 'application_name after SET ... DEFAULT (the startup value)')
  eq((await q(b, 'SHOW application_name')).rows, before, 'client b application_name untouched')
})

check('begin_options', async (t) => {
  const c = await connect(t)
  const id = ID_BASE + 810
  await deleteIdsLater(t, c, id, 1)
  await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id, 'x'])
  const keyed = () => q(c, 'SELECT val FROM drv_items WHERE id = $1', [id])
  await q(c, 'BEGIN ISOLATION LEVEL REPEATABLE READ')
  await keyed()
  eq((await q(c, 'SHOW transaction_isolation')).rows, [{ transaction_isolation: 'repeatable read' }], 'BEGIN ISOLATION LEVEL REPEATABLE READ')
  await q(c, 'COMMIT')
  await q(c, 'BEGIN READ ONLY')
  await keyed()
  await expectCode(c.query('UPDATE drv_items SET val = $2 WHERE id = $1', [id, 'y']), '25006', 'UPDATE in BEGIN READ ONLY')
  await q(c, 'ROLLBACK')
  await q(c, 'START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY')
  await keyed()
  eq(
    (await q(c, "SELECT current_setting('transaction_isolation') AS i, current_setting('transaction_read_only') AS r")).rows,
    [{ i: 'serializable', r: 'on' }],
    'START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY',
  )
  await q(c, 'COMMIT')
  eq((await q(c, 'SHOW transaction_isolation')).rows, [{ transaction_isolation: 'read committed' }], 'isolation after COMMIT')
})

check('large_values', async (t) => {
  const c = await connect(t)
  const text = 'é'.repeat(1 << 20) + 'xyz' // 2 MiB of UTF-8
  const r = await q(c, 'SELECT length($1::text) AS n, md5($1::text) AS h', [text], 'a 2 MiB text parameter')
  const { createHash } = await import('node:crypto')
  eq(r.rows, [{ n: text.length, h: createHash('md5').update(text).digest('hex') }], '2 MiB text parameter')
  const bytes = Buffer.alloc(3 << 20, 7)
  const rb = await q(c, 'SELECT $1::bytea AS b', [bytes], 'a 3 MiB bytea parameter')
  assert(Buffer.isBuffer(rb.rows[0].b) && rb.rows[0].b.equals(bytes), '3 MiB bytea round trip')
  const lit = 'a'.repeat(1 << 20)
  eq((await q(c, `SELECT length('${lit}') AS n`, undefined, 'a 1 MiB literal')).rows, [{ n: lit.length }], '1 MiB literal in a simple query')
  const id = ID_BASE + 820
  await deleteIdsLater(t, c, id, 1)
  await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id, text], 'keyed INSERT of 2 MiB')
  eq((await q(c, 'SELECT md5(val) AS h FROM drv_items WHERE id = $1', [id])).rows, [{ h: r.rows[0].h }], 'keyed SELECT of 2 MiB')
})

check('auth_errors', async (t) => {
  const tryConnect = async (extra, code, what) => {
    const c = new pg.Client(config(extra))
    c.on('error', () => {})
    t.onClose(
      () => c.end(),
      () => c.connection.stream.destroy(),
    )
    await expectCode(withTimeout(c.connect(), 8000, what), code, what)
  }
  await tryConnect({ password: 'wrong-password' }, '28P01', 'wrong password')
  await tryConnect({ user: 'drv_pg_no_such_user' }, '28P01', 'unknown user')
  await tryConnect({ database: 'drv_pg_no_such_db' }, '3D000', 'unknown database')
  const c = await connect(t)
  eq((await q(c, 'SELECT 1 AS x')).rows, [{ x: 1 }], 'good login after the failed ones')
})

check('abandoned_sessions', async (t) => {
  // Clients that vanish (socket closed) mid-transaction, with a failed
  // transaction, with an open portal: later clients must see none of it.
  const id = ID_BASE + 830
  const admin = await connect(t)
  await deleteIdsLater(t, admin, id, 3)
  const vanish = async (steps) => {
    const c = await connect(t)
    await steps(c)
    quiet.add(c)
    c.connection.stream.destroy()
  }
  await vanish(async (c) => {
    await q(c, 'BEGIN')
    await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id, 'abandoned'])
    await q(c, "SET TimeZone = 'Asia/Tokyo'")
  })
  await vanish(async (c) => {
    await q(c, 'BEGIN')
    await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id + 1, 'failed'])
    await expectCode(c.query('SELECT 1/0'), '22012', 'error before vanishing')
  })
  await vanish(async (c) => {
    const cursor = c.query(new Cursor('SELECT g FROM drv_items d, generate_series(1, 100000) g WHERE d.id = $1', [id + 2]))
    await cursor.read(5)
  })
  await sleep(200)
  const fresh = await connect(t)
  const tz = (await q(fresh, 'SHOW TimeZone')).rows
  await fresh.end() // session pooling: leave the server connections to the clients below
  const n = env.mode === 'session' ? env.poolSize - 1 : 2 * env.poolSize
  const clients = []
  for (let i = 0; i < n; i++) clients.push(await connect(t))
  await Promise.all(
    clients.map(async (c, i) => {
      for (let k = 0; k < 3; k++) {
        const r = await q(c, 'SELECT count(*)::int AS n FROM drv_items WHERE id = $1', [id])
        eq(r.rows, [{ n: 0 }], `client ${i}: row of the abandoned transaction`)
        eq((await q(c, 'SELECT count(*)::int AS n FROM drv_items WHERE id = $1', [id + 1])).rows, [{ n: 0 }], `client ${i}: row of the abandoned failed transaction`)
        eq((await q(c, 'SHOW TimeZone')).rows, tz, `client ${i}: TimeZone of the abandoned session`)
        eq((await q(c, 'SELECT now() = statement_timestamp() AS fresh')).rows, [{ fresh: true }], `client ${i}: statement outside any transaction`)
        eq(c.getTransactionStatus(), 'I', `client ${i}: transaction status`)
      }
    }),
  )
})

check(
  'listen_notify',
  async (t) => {
    const listener = await connect(t)
    const sender = await connect(t)
    const got = []
    listener.on('notification', (m) => got.push([m.channel, m.payload]))
    await q(listener, 'LISTEN drv_pg_chan')
    await q(sender, "NOTIFY drv_pg_chan, 'hello'")
    await q(sender, 'SELECT pg_notify($1, $2)', ['drv_pg_chan', 'world'])
    const deadline = Date.now() + 5000
    while (got.length < 2 && Date.now() < deadline) await sleep(20)
    eq(got, [['drv_pg_chan', 'hello'], ['drv_pg_chan', 'world']], 'notifications received')
    // A NOTIFY rolled back is never sent; one committed is.
    await q(sender, 'BEGIN')
    await q(sender, "NOTIFY drv_pg_chan, 'rolled back'")
    await q(sender, 'ROLLBACK')
    await q(sender, 'BEGIN')
    await q(sender, "NOTIFY drv_pg_chan, 'committed'")
    await q(sender, 'COMMIT')
    const until = Date.now() + 5000
    while (got.length < 3 && Date.now() < until) await sleep(20)
    await sleep(200)
    eq(got.slice(2), [['drv_pg_chan', 'committed']], 'notifications after commit')
    await q(listener, 'UNLISTEN drv_pg_chan')
    await q(sender, "NOTIFY drv_pg_chan, 'unheard'")
    await sleep(300)
    eq(got.length, 3, 'notifications after UNLISTEN')
  },
  { modes: ['session', 'transaction', 'sharded'] },
)

check('cancel', async (t) => {
  const c = await connect(t)
  for (let i = 0; i < 2; i++) {
    const query = new pg.Query('SELECT pg_sleep(10)')
    const done = c.query(query)
    const result = new Promise((resolve, reject) => {
      query.on('end', resolve)
      query.on('error', reject)
    })
    void done
    await sleep(300)
    const started = Date.now()
    const canceller = new pg.Client(config())
    canceller.cancel(c, query)
    t.onClose(
      () => {},
      () => canceller.connection.stream.destroy(),
    )
    await expectCode(withTimeout(result, 5000, 'cancelled pg_sleep(10)'), '57014', `cancel ${i + 1}`)
    assert(Date.now() - started < 5000, `cancel ${i + 1} took ${Date.now() - started} ms`)
    eq((await q(c, 'SELECT $1::int AS x', [i])).rows, [{ x: i }], `query after cancel ${i + 1}`)
  }
})

check('statement_timeout', async (t) => {
  const c = await connect(t, { statement_timeout: 300 })
  eq((await q(c, 'SHOW statement_timeout')).rows, [{ statement_timeout: '300ms' }], 'statement_timeout from the startup packet')
  await expectCode(c.query('SELECT pg_sleep(5)'), '57014', 'pg_sleep(5) with statement_timeout 300ms')
  await q(c, 'SET statement_timeout = 0')
  eq((await q(c, 'SELECT pg_sleep(0.5)::text AS x')).rows, [{ x: '' }], 'pg_sleep(0.5) after SET statement_timeout = 0')
  eq((await q(c, 'SHOW statement_timeout')).rows, [{ statement_timeout: '0' }], 'SHOW statement_timeout after SET')
})

check(
  'pool_concurrency',
  async (t) => {
    // Session pooling gives a client a server connection for its whole
    // session, so there the pool has only as many clients as servers.
    const max = env.mode === 'session' ? env.poolSize : 32
    const p = pool(t, { max, idleTimeoutMillis: 1000 })
    const first = ID_BASE + 1000
    const n = 200
    await q(p, 'DELETE FROM drv_items WHERE id >= $1 AND id < $2', [first, first + n])
    t.defer(() => p.query('DELETE FROM drv_items WHERE id >= $1 AND id < $2', [first, first + n]))
    await Promise.all(
      ids(first, n).map(async (id) => {
        const c = await must(p.connect(), 'pool connect')
        let err
        try {
          await q(c, 'BEGIN')
          await q(c, 'INSERT INTO drv_items (id, val) VALUES ($1, $2)', [id, `p${id}`])
          eq((await q(c, 'SELECT val FROM drv_items WHERE id = $1', [id])).rows, [{ val: `p${id}` }], `transaction ${id}`)
          await q(c, 'COMMIT')
        } catch (e) {
          err = e
        } finally {
          c.release(err)
        }
        if (err) throw err
      }),
    )
    const r = await q(p, 'SELECT count(*)::int AS n FROM drv_items WHERE id >= $1 AND id < $2', [first, first + n])
    eq(r.rows.reduce((s, x) => s + x.n, 0), n, 'committed rows (summed over shards)')
    if (env.mode === 'session') {
      // Short sessions, more at once than server connections.
      await Promise.all(
        Array.from({ length: 4 }, async (_, w) => {
          for (let k = 0; k < 10; k++) {
            const c = new pg.Client(config())
            c.on('error', () => {})
            t.onClose(
              () => c.end(),
              () => c.connection.stream.destroy(),
            )
            await must(c.connect(), `short session ${w}/${k}: connect`)
            eq((await q(c, 'SELECT $1::int AS x', [k])).rows, [{ x: k }], `short session ${w}/${k}`)
            await c.end()
          }
        }),
      )
    }
  },
  { timeout: 30000 },
)

// ---------------------------------------------------------------------------
// Mode columns: tables the application creates.

const KEYED = 'id bigint PRIMARY KEY, val text'
const PLAIN = 'k text PRIMARY KEY, v text'
const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i)

/** Each shard's rows of `sql`, read from the shard directly. */
async function perShard(sql) {
  const out = []
  for (const { port, database } of shards()) {
    const c = new pg.Client({ ...config(), port, database })
    await must(c.connect(), `connect to ${database}`)
    try {
      out.push((await must(c.query({ text: sql, rowMode: 'array' }), `${sql} on ${database}`)).rows)
    } finally {
      await c.end()
    }
  }
  return out
}

async function sharded(c, table, columns, want) {
  const byKey = async (id) => (await q(c, { text: `SELECT ${columns} FROM ${table} WHERE id = $1`, values: [id], rowMode: 'array' })).rows
  await expectSharded(table, await perShard(`SELECT ${columns} FROM ${table}`), want, byKey)
}

async function copies(table, columns, want) {
  expectCopies(table, await perShard(`SELECT ${columns} FROM ${table}`), want)
}

/** Two clients (the second connected before any DDL) and this check's two tables. */
async function columnsSetup(t, name) {
  const a = await connect(t)
  const b = await connect(t)
  const keyed = tbl(`${name}_k`)
  const plain = tbl(`${name}_p`)
  await dropLater(t, a, keyed)
  await dropLater(t, a, plain)
  return { a, b, keyed, plain }
}

const columnsOnly = { modes: ['columns'] }

check(
  'columns_create_insert',
  async (t) => {
    const { a, b, keyed, plain } = await columnsSetup(t, 'ci')
    await q(a, `CREATE TABLE ${keyed} (${KEYED})`)
    await q(b, `INSERT INTO ${keyed} VALUES (1, 'v1')`, undefined, 'simple INSERT without a column list')
    await q(b, `INSERT INTO ${keyed} (id, val) VALUES (2, 'v2')`, undefined, 'simple INSERT')
    for (const i of range(3, 9)) await q(b, `INSERT INTO ${keyed} (id, val) VALUES ($1, $2)`, [i, `v${i}`], `unnamed INSERT ${i}`)
    for (const i of range(9, 17)) {
      await must(a.query({ name: 'drv_pg_ins', text: `INSERT INTO ${keyed} VALUES ($1, $2)`, values: [i, `v${i}`] }), `named INSERT ${i}`)
    }
    await sharded(a, keyed, 'id, val', range(1, 17).map((i) => [i, `v${i}`]))
    await q(a, `CREATE TABLE ${plain} (${PLAIN})`)
    await q(b, `INSERT INTO ${plain} VALUES ('s', 'simple')`, undefined, 'simple INSERT into the table without id')
    await q(b, `INSERT INTO ${plain} (k, v) VALUES ($1, $2)`, ['e', 'extended'], 'unnamed INSERT into it')
    await copies(plain, 'k, v', [['s', 'simple'], ['e', 'extended']])
  },
  columnsOnly,
)

check(
  'columns_create_copy',
  async (t) => {
    const { a, keyed, plain } = await columnsSetup(t, 'cc')
    await q(a, `CREATE TABLE ${keyed} (${KEYED})`)
    const rows = range(1, 21).map((i) => [i, `v${i}`])
    eq(await must(copyIn(a, `COPY ${keyed} (id, val) FROM STDIN`, copyText(rows)), 'COPY with a column list'), 20, 'rows copied')
    const more = range(21, 31).map((i) => [i, `v${i}`])
    eq(await must(copyIn(a, `COPY ${keyed} FROM STDIN`, copyText(more)), 'COPY without a column list'), 10, 'rows copied')
    const csv = range(31, 41).map((i) => `${i},v${i}\n`).join('')
    eq(await must(copyIn(a, `COPY ${keyed} FROM STDIN (FORMAT csv)`, csv), 'COPY csv'), 10, 'rows copied')
    await sharded(a, keyed, 'id, val', range(1, 41).map((i) => [i, `v${i}`]))
    await q(a, `CREATE TABLE ${plain} (${PLAIN})`)
    const plainRows = range(0, 3).map((i) => [`k${i}`, `v${i}`])
    await must(copyIn(a, `COPY ${plain} FROM STDIN`, copyText(plainRows)), 'COPY into the table without id')
    await copies(plain, 'k, v', plainRows)
  },
  columnsOnly,
)

check(
  'columns_add_column',
  async (t) => {
    const { a, b, keyed, plain } = await columnsSetup(t, 'ac')
    await q(a, `CREATE TABLE ${keyed} (${KEYED})`)
    await q(a, `CREATE TABLE ${plain} (${PLAIN})`)
    await q(b, `INSERT INTO ${keyed} (id, val) VALUES ($1, $2)`, [1, 'v1'])
    await q(b, `INSERT INTO ${plain} (k, v) VALUES ($1, $2)`, ['a', 'before'])
    await q(a, `ALTER TABLE ${keyed} ADD COLUMN note text`)
    await q(b, `INSERT INTO ${keyed} (id, val, note) VALUES (2, 'v2', 'n2')`, undefined, 'simple INSERT of the new column')
    await q(b, `INSERT INTO ${keyed} VALUES (3, 'v3', 'n3')`, undefined, 'simple INSERT without a column list')
    for (const i of range(4, 9)) {
      await q(b, `INSERT INTO ${keyed} (id, val, note) VALUES ($1, $2, $3)`, [i, `v${i}`, `n${i}`], `unnamed INSERT ${i}`)
    }
    await q(a, `INSERT INTO ${keyed} VALUES ($1, $2, $3)`, [9, 'v9', 'n9'], 'unnamed INSERT without a column list')
    const rows = range(10, 17).map((i) => [i, `v${i}`, `n${i}`])
    await must(copyIn(b, `COPY ${keyed} (id, val, note) FROM STDIN`, copyText(rows)), 'COPY of the new column')
    const want = [[1, 'v1', null], ...range(2, 17).map((i) => [i, `v${i}`, `n${i}`])]
    await sharded(a, keyed, 'id, val, note', want)
    await q(a, `ALTER TABLE ${plain} ADD COLUMN note text`)
    await q(b, `INSERT INTO ${plain} VALUES ('s', 'simple', 'n')`, undefined, 'simple INSERT of the new column')
    await q(b, `INSERT INTO ${plain} (k, v, note) VALUES ($1, $2, $3)`, ['e', 'ext', 'n'], 'unnamed INSERT of it')
    await copies(plain, 'k, v, note', [['a', 'before', null], ['s', 'simple', 'n'], ['e', 'ext', 'n']])
  },
  columnsOnly,
)

check(
  'columns_in_transaction',
  async (t) => {
    const { a: c, keyed, plain } = await columnsSetup(t, 'tx')
    await q(c, 'BEGIN')
    await q(c, `CREATE TABLE ${keyed} (${KEYED})`)
    await q(c, `INSERT INTO ${keyed} VALUES (1, 'v1')`, undefined, 'simple INSERT')
    for (const i of range(2, 9)) await q(c, `INSERT INTO ${keyed} (id, val) VALUES ($1, $2)`, [i, `v${i}`], `unnamed INSERT ${i}`)
    await must(copyIn(c, `COPY ${keyed} (id, val) FROM STDIN`, copyText(range(9, 17).map((i) => [i, `v${i}`]))), 'COPY')
    await q(c, `CREATE TABLE ${plain} (${PLAIN})`)
    await q(c, `INSERT INTO ${plain} (k, v) VALUES ($1, $2)`, ['a', '1'], 'INSERT into the table without id')
    await q(c, `ALTER TABLE ${keyed} ADD COLUMN note text`)
    await q(c, `INSERT INTO ${keyed} (id, val, note) VALUES ($1, $2, $3)`, [17, 'v17', 'n'], 'INSERT of the new column')
    await q(c, 'COMMIT')
    const want = [...range(1, 17).map((i) => [i, `v${i}`, null]), [17, 'v17', 'n']]
    await sharded(c, keyed, 'id, val, note', want)
    await copies(plain, 'k, v', [['a', '1']])
  },
  columnsOnly,
)

check(
  'columns_add_key_refused',
  async (t) => {
    // A table without id is omnisharded (every shard holds all its rows):
    // given id it would be sharded by it with every row still everywhere.
    const { a: c, plain } = await columnsSetup(t, 'kr')
    await q(c, `CREATE TABLE ${plain} (${PLAIN})`)
    await q(c, `INSERT INTO ${plain} VALUES ('a', '1')`)
    const e = await expectCode(c.query(`ALTER TABLE ${plain} ADD COLUMN id bigint`), '0A000', 'adding the key column')
    assert(e.message.includes('omnisharded') && e.message.includes(plain), `the refusal does not say why: ${describe(e)}`)
    await q(c, `INSERT INTO ${plain} (k, v) VALUES ($1, $2)`, ['b', '2'], 'INSERT after the refusal')
    await copies(plain, 'k, v', [['a', '1'], ['b', '2']])
  },
  columnsOnly,
)

if (env.adminUser) {
  check('admin_show_pools', async (t) => {
    // Give the connections closed by the checks above a moment to go.
    await sleep(300)
    const admin = await connect(t, { user: env.adminUser, password: env.adminPassword, database: 'admin' })
    const pools = await q(admin, 'SHOW POOLS')
    assert(pools.rows.length > 0, 'SHOW POOLS returned no rows')
    const counters = ['cl_active', 'cl_waiting', 'sv_active', 'sv_idle', 'sv_used', 'sv_tested', 'sv_login']
    for (const row of pools.rows) {
      for (const col of counters) {
        if (!(col in row)) continue
        const v = Number(row[col])
        assert(Number.isInteger(v) && v >= 0 && v <= 1000, `SHOW POOLS ${row.database}/${row.user}: ${col} = ${row[col]}`)
      }
    }
    assert('cl_active' in pools.rows[0], `SHOW POOLS has no cl_active column: ${Object.keys(pools.rows[0]).join(',')}`)
    const clients = await q(admin, 'SHOW CLIENTS')
    assert(Array.isArray(clients.rows), 'SHOW CLIENTS')
  })
}

await run(DRIVER)
