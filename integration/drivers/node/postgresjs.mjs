// postgres.js (`postgres`) against pgshard.
//
// What postgres.js does on the wire: tagged templates are named prepared
// statements (`prepare: true`). A statement without parameters goes as
// Parse+Describe+Bind+Execute+Sync in one write; one with parameters first as
// Parse+Describe+Flush, then Bind+Execute+Sync once ParameterDescription is in;
// a known one as Bind+Execute+Sync. Queries on one connection are pipelined.
// After "cached plan must not change result type" it re-prepares under a new
// name. `.cursor(n)` reads with Execute(n); `sql.unsafe` without parameters,
// `.readable()` and `.writable()` (COPY) use the simple protocol; `.cancel()`
// sends a CancelRequest on a new connection; `sql.listen` keeps a dedicated
// connection.
//
// Checks (each expects what the driver gets from Postgres itself; mode
// `sharded` uses drv_items, sharded by id, for rows):
//   simple_and_extended     tagged templates, parameter types, prepare: false, simple
//   ddl_tagged              DROP/CREATE TABLE IF [NOT] EXISTS as tagged templates; one notice
//   prepared_across_ddl     the same query text across DROP/CREATE with a new column
//                           type: postgres.js' re-prepare must work
//   describe_errors         a statement failing at run time / at Parse three times in
//                           a row gives the same error each time
//   large_param_count       32767, 32768 and 65533 bind parameters (65533 is the
//                           most postgres.js sends)
//   pipelining              50 concurrent queries on one connection, one failing
//   cursor                  .cursor(10) in and outside sql.begin (sharded: keyed and
//                           table-less ones; one over every shard is refused with
//                           0A000, not supported yet)
//   copy                    .writable() COPY FROM STDIN / .readable() COPY TO STDOUT
//                           (sharded: keyed COPY TO, COPY FROM refused cleanly or right)
//   tx_error                BEGIN; error; next statement 25P02; ROLLBACK recovers
//   savepoint               sql.begin + sql.savepoint with an error inside the savepoint
//   keyed_round_trips       INSERT/SELECT/UPDATE/DELETE by key with parameters
//   fanout_error_recovery   a failing keyless statement, then the same one working
//   describe_only           .describe() (Parse+Describe+Flush, Sync) of keyed, table-less
//                           and failing statements
//   session_settings        SET / SET LOCAL per connection, interleaved; ParameterStatus
//   begin_options           sql.begin('isolation level ...' / 'read only') reach the server
//   large_values            multi-MiB text and bytea parameters, pipelined
//   listen_notify           sql.listen / sql.notify (not in mode columns)
//   cancel                  query.cancel() (CancelRequest) on pg_sleep: 57014
//   concurrency             200 concurrent sql.begin transactions on max 32
//                           (session: pool size) connections
//   admin_show_pools        SHOW POOLS / SHOW CLIENTS counters are sane (run last)
//
// Mode `columns` (two shards, only a column-only entry on `id`, no table): the
// application's own tables, created and written at once by the creating
// connection and by another one connected before, rows read back from each
// shard:
//   columns_create_insert   a table with id (sharded) and one without (copies):
//                           simple (sql.unsafe), tagged-template (named) and
//                           unnamed (prepare: false) INSERTs
//   columns_create_copy     .writable() COPY FROM STDIN, with and without a
//                           column list, and CSV
//   columns_add_column      ALTER TABLE ADD COLUMN, then INSERTs and COPY of it
//   columns_in_transaction  all of it inside sql.begin
//   columns_add_key_refused ADD COLUMN id on a table without it: 0A000

import postgres from 'postgres'
import { pipeline } from 'node:stream/promises'
import { Readable, Writable } from 'node:stream'
import { env, check, run, assert, eq, expectCode, expectRefused, must, sleep, withTimeout, ids } from './lib.mjs'
import { describe, shards, expectSharded, expectCopies } from './lib.mjs'

const DRIVER = 'postgres.js'
const tbl = (name) => `drv_pgjs_${name}`
// drv_items ids of this driver (other drivers use other ranges).
const ID_BASE = 1_200_000

/** A postgres.js instance that the check's end closes (sql.end, then destroy). */
function connect(t, opts = {}) {
  const sql = postgres({
    host: env.host,
    port: env.port,
    user: env.user,
    password: env.password,
    database: env.database,
    max: 1,
    connect_timeout: 8,
    onnotice: () => {},
    ...opts,
  })
  t.onClose(
    () => sql.end({ timeout: 1 }),
    () => sql.end({ timeout: 0 }),
  )
  return sql
}

const rows = (r) => [...r]

/** Simple-protocol statement (sql.unsafe without parameters). */
const simple = (sql, text) => must(sql.unsafe(text), text)

async function dropLater(t, sql, table) {
  await simple(sql, `DROP TABLE IF EXISTS ${table}`)
  t.defer(() => sql.unsafe(`DROP TABLE IF EXISTS ${table}`))
}

async function deleteIdsLater(t, sql, first, n) {
  const del = () => sql.unsafe(`DELETE FROM drv_items WHERE id >= ${first} AND id < ${first + n}`)
  await must(del(), 'delete old rows')
  t.defer(del)
}

async function insertIds(sql, list, val = (id) => `v${id}`) {
  for (const id of list) await must(sql`INSERT INTO drv_items (id, val) VALUES (${id}, ${val(id)})`, `insert ${id}`)
}

// ---------------------------------------------------------------------------

check('simple_and_extended', async (t) => {
  const sql = connect(t)
  eq(rows(await must(sql`SELECT 1 AS x`, 'SELECT 1')), [{ x: 1 }], 'SELECT 1')
  eq(rows(await must(sql`SELECT 1 AS x`, 'SELECT 1 again')), [{ x: 1 }], 'SELECT 1 again (prepared)')
  const ts = new Date('2024-02-29T12:34:56.789Z')
  for (let i = 0; i < 2; i++) {
    const [r] = await must(
      sql`SELECT ${41}::int AS i, ${'9007199254740993'}::bigint AS b, ${'héllo'}::text AS s, ${null}::text AS n,
                 ${true}::bool AS t, ${ts}::timestamptz AS ts, ${Buffer.from([0, 1, 255])}::bytea AS by,
                 ${sql.json({ k: [1, 'x'] })}::jsonb AS j, ${sql.array([1, 2, 3])}::int[] AS a`,
      `parameter types (run ${i + 1})`,
    )
    eq(
      [r.i, r.b, r.s, r.n, r.t, r.ts.toISOString(), [...r.by], r.j, r.a],
      [41, '9007199254740993', 'héllo', null, true, ts.toISOString(), [0, 1, 255], { k: [1, 'x'] }, [1, 2, 3]],
      `parameter round trip (run ${i + 1})`,
    )
  }
  const unnamed = connect(t, { prepare: false })
  for (let i = 0; i < 3; i++) {
    eq(rows(await must(unnamed`SELECT ${i}::int + 1 AS x`, 'prepare: false')), [{ x: i + 1 }], `prepare: false (run ${i + 1})`)
  }
  const multi = await simple(sql, 'SELECT 1 AS a; SELECT 2 AS b')
  eq(multi.map((r) => rows(r)), [[{ a: 1 }], [{ b: 2 }]], 'two statements in one simple query')
})

check('ddl_tagged', async (t) => {
  const notices = []
  const sql = connect(t, { onnotice: (n) => notices.push(`${n.code} ${n.message}`) })
  const table = tbl('tagged')
  t.defer(() => sql.unsafe(`DROP TABLE IF EXISTS ${table}`))
  const bounded = (q, what) => withTimeout(q, 5000, what)
  const step = (q, what) => must(bounded(q, what), what)
  await step(sql`DROP TABLE IF EXISTS ${sql(table)}`, 'DROP TABLE IF EXISTS (tagged)')
  await step(sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (id int, v text)`, 'CREATE TABLE IF NOT EXISTS (tagged)')
  notices.length = 0
  await step(sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (id int, v text)`, 'CREATE TABLE IF NOT EXISTS again (tagged, notice)')
  eq(notices, [`42P07 relation "${table}" already exists, skipping`], 'notices of CREATE TABLE IF NOT EXISTS on an existing table')
  const r = await step(sql`SELECT count(*)::int AS n FROM ${sql(table)}`, 'SELECT count(*) (tagged)')
  assert(r.length >= 1 && r.every((x) => x.n === 0), `count(*) rows: ${JSON.stringify(rows(r))}`)
  await step(sql`ALTER TABLE ${sql(table)} ADD COLUMN w int`, 'ALTER TABLE (tagged)')
  await step(sql`DROP TABLE ${sql(table)}`, 'DROP TABLE (tagged)')
  await expectCode(bounded(sql`DROP TABLE ${sql(table)}`, 'DROP TABLE of a dropped table'), '42P01', 'DROP TABLE of a dropped table (tagged)')
  eq(rows(await step(sql`SELECT 1 AS x`, 'SELECT 1 after DDL')), [{ x: 1 }], 'SELECT 1 after DDL')
})

check('prepared_across_ddl', async (t) => {
  const sql = connect(t)
  const table = tbl('ddl')
  await dropLater(t, sql, table)
  const query = () => sql`SELECT v FROM ${sql(table)} WHERE id = ${1}`
  await simple(sql, `CREATE TABLE ${table} (id int, v timestamptz)`)
  if (!env.sharded) await simple(sql, `INSERT INTO ${table} VALUES (1, '2024-01-02T03:04:05Z')`)
  for (let i = 0; i < 2; i++) {
    const r = await must(query(), `query before DDL (run ${i + 1})`)
    eq(r.columns.map((c) => c.type), [1184], `result type before DDL (run ${i + 1}, timestamptz)`)
    if (!env.sharded) eq(r[0].v.toISOString(), '2024-01-02T03:04:05.000Z', 'value before DDL')
  }
  await simple(sql, `DROP TABLE ${table}`)
  await simple(sql, `CREATE TABLE ${table} (id int, v int)`)
  if (!env.sharded) await simple(sql, `INSERT INTO ${table} VALUES (1, 7)`)
  // Postgres: "cached plan must not change result type"; postgres.js then
  // prepares the text again under a new name.
  for (let i = 0; i < 3; i++) {
    const r = await must(query(), `query after DDL (run ${i + 1})`)
    eq(r.columns.map((c) => c.type), [23], `result type after DDL (run ${i + 1}, int4)`)
    if (!env.sharded) eq(rows(r), [{ v: 7 }], `rows after DDL (run ${i + 1})`)
  }
})

check('describe_errors', async (t) => {
  const sql = connect(t)
  const missing = tbl('no_such_table')
  await dropLater(t, sql, missing)
  for (let i = 1; i <= 3; i++) await expectCode(sql`SELECT 1/0`, '22012', `SELECT 1/0 (run ${i})`)
  eq(rows(await must(sql`SELECT 1 AS x`, 'SELECT 1 after 22012')), [{ x: 1 }], 'SELECT 1 after 22012')
  for (let i = 1; i <= 3; i++) await expectCode(sql`SELECT * FROM ${sql(missing)}`, '42P01', `SELECT from a missing table (run ${i})`)
  eq(rows(await must(sql`SELECT 2 AS x`, 'SELECT 2 after 42P01')), [{ x: 2 }], 'SELECT 2 after 42P01')
  for (let i = 1; i <= 3; i++) await expectCode(sql`SELECT ${i}::int / 0`, '22012', `SELECT $1::int / 0 (run ${i})`)
  for (let i = 1; i <= 3; i++) await expectCode(sql`SELECT * FROM ${sql(missing)} WHERE id = ${i}`, '42P01', `SELECT from a missing table with a parameter (run ${i})`)
  eq(rows(await must(sql`SELECT ${3}::int AS x`, 'SELECT $1 after the errors')), [{ x: 3 }], 'SELECT $1 after the errors')
})

check('large_param_count', async (t) => {
  const sql = connect(t)
  for (const n of [32767, 32768, 65533]) {
    const text = `SELECT cardinality(ARRAY[${Array.from({ length: n }, (_, i) => `$${i + 1}::int`).join(',')}]) AS n`
    const values = Array.from({ length: n }, (_, i) => i)
    eq(rows(await must(sql.unsafe(text, values, { prepare: true }), `${n} parameters (named)`)), [{ n }], `${n} parameters (named)`)
    eq(rows(await must(sql.unsafe(text, values), `${n} parameters (unnamed)`)), [{ n }], `${n} parameters (unnamed)`)
  }
  eq(rows(await must(sql`SELECT 1 AS x`, 'SELECT 1')), [{ x: 1 }], 'connection still works')
})

/** Runs 50 queries at once; query `bad` must fail with `code`, the others give `want(i)`. */
async function fifty(what, make, want, bad, code) {
  const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => make(i)))
  results.forEach((r, i) => {
    if (i === bad) {
      assert(r.status === 'rejected' && r.reason.code === code, `${what}, query ${i}: want ${code}, got ${r.status === 'rejected' ? `${r.reason.code} ${r.reason.message}` : 'success'}`)
    } else {
      assert(r.status === 'fulfilled', `${what}, query ${i}: ${r.status === 'rejected' ? `${r.reason.code} ${r.reason.message}` : ''}`)
      eq(rows(r.value), want(i), `${what}, query ${i}`)
    }
  })
}

check('pipelining', async (t) => {
  const sql = connect(t, { max: 1 })
  const bad = 25
  // Table-less statements.
  for (let round = 1; round <= 2; round++) {
    // Round 1 prepares (describe first), round 2 pipelines Bind+Execute+Sync.
    await fifty(
      `table-less, round ${round}`,
      (i) => (i === bad ? sql`SELECT ${i}::int / 0 AS i` : sql`SELECT ${i}::int AS i`),
      (i) => [{ i }],
      bad,
      '22012',
    )
  }
  await fifty(
    'table-less, no parameters',
    (i) => (i === bad ? sql`SELECT 1/0 AS i` : sql`SELECT ${sql.unsafe(String(i))}::int AS i`),
    (i) => [{ i }],
    bad,
    '22012',
  )
  // Keyed statements on drv_items.
  const first = ID_BASE + 100
  await deleteIdsLater(t, sql, first, 50)
  await insertIds(sql, ids(first, 50))
  for (let round = 1; round <= 2; round++) {
    await fifty(
      `keyed, round ${round}`,
      (i) =>
        i === bad
          ? sql`SELECT val, 1/0 AS z FROM drv_items WHERE id = ${first + i}`
          : sql`SELECT val FROM drv_items WHERE id = ${first + i}`,
      (i) => [{ val: `v${first + i}` }],
      bad,
      '22012',
    )
  }
  await fifty(
    'keyed, literal keys',
    (i) =>
      i === bad
        ? sql`SELECT val, 1/0 AS z FROM drv_items WHERE id = ${sql.unsafe(String(first + i))}`
        : sql`SELECT val FROM drv_items WHERE id = ${sql.unsafe(String(first + i))}`,
    (i) => [{ val: `v${first + i}` }],
    bad,
    '22012',
  )
})

async function readCursor(q, batch) {
  const out = []
  for await (const chunk of q.cursor(batch)) {
    assert(chunk.length <= batch, `cursor(${batch}) gave ${chunk.length} rows`)
    out.push(...chunk)
  }
  return out
}

check('cursor', async (t) => {
  const sql = connect(t)
  const series = Array.from({ length: 1000 }, (_, i) => i + 1)
  const gs = () => sql`SELECT g FROM generate_series(1, ${1000}) g`
  eq((await must(readCursor(gs(), 10), 'cursor outside a transaction')).map((r) => r.g), series, 'cursor outside a transaction')
  eq(rows(await must(sql`SELECT 1 AS x`, 'query after the cursor')), [{ x: 1 }], 'query after the cursor')

  const first = ID_BASE + 200
  await deleteIdsLater(t, sql, first, 100)
  await insertIds(sql, ids(first, 100))
  const keyed = (tx) => tx`SELECT g FROM drv_items d, generate_series(1, 1000) g WHERE d.id = ${first} ORDER BY g`
  await must(
    sql.begin(async (tx) => {
      if (env.sharded) {
        // A transaction stays on the shard of its first keyed statement.
        eq(rows(await tx`SELECT val FROM drv_items WHERE id = ${first}`), [{ val: `v${first}` }], 'keyed select in sql.begin')
        eq((await readCursor(keyed(tx), 10)).map((r) => r.g), series, 'keyed cursor in sql.begin')
        eq((await readCursor(keyed(tx), 7)).map((r) => r.g), series, 'second keyed cursor in sql.begin')
      } else {
        eq((await readCursor(tx`SELECT g FROM generate_series(1, ${1000}) g`, 10)).map((r) => r.g), series, 'cursor in sql.begin')
        eq((await readCursor(tx`SELECT g FROM generate_series(1, ${1000}) g`, 7)).map((r) => r.g), series, 'second cursor in sql.begin')
      }
    }),
    'sql.begin with cursors',
  )
  eq((await must(readCursor(keyed(sql), 10), 'keyed cursor outside a transaction')).map((r) => r.g), series, 'keyed cursor outside a transaction')
  // A read over every shard (id range: keyless in sharded mode).
  const range = () => sql`SELECT id FROM drv_items WHERE id >= ${first} AND id < ${first + 100}`
  if (env.sharded) {
    // A cursor (Execute(n) + Flush, no Sync) over every shard is not supported
    // yet: pgshard refuses it with 0A000 at once instead of hanging, and the
    // connection (max: 1; postgres.js sends Sync on the error) works afterwards.
    await expectRefused(readCursor(range(), 10), 'cursor over an id range (every shard)')
  } else {
    const all = await must(readCursor(range(), 10), 'cursor over an id range')
    eq(all.map((r) => Number(r.id)).sort((a, b) => a - b), ids(first, 100), 'cursor over an id range (every shard)')
  }
  eq(rows(await withTimeout(must(sql`SELECT 2 AS x`, 'query after the cursors'), 5000, 'query after the cursors')), [{ x: 2 }], 'query after the cursors')
})

const copyText = (list) => list.map((r) => r.join('\t') + '\n').join('')

async function copyIn(q, text) {
  const w = await q.writable()
  await pipeline(Readable.from([Buffer.from(text)]), w)
}

async function copyOut(q) {
  const r = await q.readable()
  const chunks = []
  await pipeline(
    r,
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
  const sql = connect(t)
  if (!env.sharded) {
    const table = tbl('copy')
    await dropLater(t, sql, table)
    await simple(sql, `CREATE TABLE ${table} (id int PRIMARY KEY, val text)`)
    const list = Array.from({ length: 1000 }, (_, i) => [i, `row ${i}`])
    await must(copyIn(sql`COPY ${sql(table)} (id, val) FROM STDIN`, copyText(list)), 'COPY FROM STDIN')
    eq(rows(await sql`SELECT count(*)::int AS n FROM ${sql(table)}`), [{ n: 1000 }], 'rows after COPY FROM')
    const out = await must(copyOut(sql`COPY (SELECT id, val FROM ${sql(table)} ORDER BY id) TO STDOUT`), 'COPY TO STDOUT')
    eq(out, copyText(list), 'COPY TO STDOUT text')
    // A COPY FROM that fails at once leaves the connection usable. (One that
    // fails after CopyDone, as on a duplicate key, hangs postgres.js' writable
    // stream even against Postgres: the driver drops that error.)
    await expectCode(copyIn(sql`COPY ${sql(tbl('no_such_table'))} (id, val) FROM STDIN`, copyText([[1, 'x']])), '42P01', 'COPY FROM into a missing table')
    eq(rows(await must(sql`SELECT count(*)::int AS n FROM ${sql(table)}`, 'count after the failed COPY')), [{ n: 1000 }], 'rows after the failed COPY')
    return
  }
  const first = ID_BASE + 300
  await deleteIdsLater(t, sql, first, 10)
  await insertIds(sql, [first], () => 'copy me')
  const out = await must(copyOut(sql`COPY (SELECT id, val FROM drv_items WHERE id = ${sql.unsafe(String(first))}) TO STDOUT`), 'keyed COPY TO STDOUT')
  eq(out, `${first}\tcopy me\n`, 'keyed COPY TO STDOUT text')
  // COPY FROM into the sharded table: rows in the right shards, or a clean refusal.
  const list = ids(first + 1, 9).map((id) => [id, `copied ${id}`])
  let copied = false
  try {
    await copyIn(sql`COPY drv_items (id, val) FROM STDIN`, copyText(list))
    copied = true
  } catch (e) {
    assert(e.code && /^[0-9A-Z]{5}$/.test(e.code), `COPY FROM into drv_items failed without a server error: ${e.code} ${e.message}`)
  }
  eq(rows(await must(sql`SELECT 1 AS x`, 'SELECT 1 after COPY FROM')), [{ x: 1 }], `connection after COPY FROM (${copied ? 'accepted' : 'refused'})`)
  if (copied) {
    for (const [id, val] of list) eq(rows(await sql`SELECT val FROM drv_items WHERE id = ${id}`), [{ val }], `copied row ${id}`)
  }
})

check('tx_error', async (t) => {
  const sql = connect(t, { max: 2 })
  const id = ID_BASE + 400
  if (env.sharded) {
    await deleteIdsLater(t, sql, id, 1)
    await insertIds(sql, [id])
  }
  // By hand on a reserved connection.
  const r = await must(sql.reserve(), 'sql.reserve')
  t.onClose(() => r.release())
  const variants = env.sharded ? [false, true] : [false]
  for (const keyedFirst of variants) {
    const how = keyedFirst ? ' (after a keyed statement)' : ''
    await must(r`BEGIN`, 'BEGIN')
    if (keyedFirst) eq(rows(await must(r`SELECT val FROM drv_items WHERE id = ${id}`, 'keyed select')), [{ val: `v${id}` }], 'keyed select')
    await expectCode(r`SELECT 1/0`, '22012', `SELECT 1/0 in a transaction${how}`)
    await expectCode(r`SELECT 1`, '25P02', `SELECT 1 after the error${how}`)
    await expectCode(r`SELECT ${1}::int`, '25P02', `SELECT $1 after the error${how}`)
    await expectCode(r.unsafe('SELECT 1'), '25P02', `simple SELECT 1 after the error${how}`)
    await must(r`ROLLBACK`, 'ROLLBACK')
    eq(rows(await must(r`SELECT 1 AS x`, 'SELECT 1 after ROLLBACK')), [{ x: 1 }], `SELECT 1 after ROLLBACK${how}`)
  }
  r.release()
  // With sql.begin: the error rejects sql.begin, which rolls back.
  await expectCode(
    sql.begin(async (tx) => {
      if (env.sharded) await tx`SELECT val FROM drv_items WHERE id = ${id}`
      await tx`SELECT 1/0`
    }),
    '22012',
    'sql.begin with SELECT 1/0',
  )
  // A statement after a caught error gets 25P02; sql.begin then rejects with
  // the first error.
  let after = null
  await expectCode(
    sql.begin(async (tx) => {
      if (env.sharded) await tx`SELECT val FROM drv_items WHERE id = ${id}`
      await tx`SELECT 1/0`.catch(() => {})
      after = await tx`SELECT 1 AS x`.then(
        (r) => `success ${JSON.stringify(rows(r))}`,
        (e) => e.code,
      )
    }),
    '22012',
    'sql.begin: SELECT 1/0 caught, then SELECT 1',
  )
  eq(after, '25P02', 'sql.begin: SELECT 1 after a caught SELECT 1/0')
  eq(rows(await must(sql`SELECT 3 AS x`, 'SELECT after sql.begin')), [{ x: 3 }], 'query after the failed transactions')
})

check('savepoint', async (t) => {
  const sql = connect(t)
  let upd, sel
  if (env.sharded) {
    const id = ID_BASE + 500
    await deleteIdsLater(t, sql, id, 1)
    await insertIds(sql, [id], () => 'start')
    upd = (tx, v) => tx`UPDATE drv_items SET val = val || ${v} WHERE id = ${id}`
    sel = async (tx) => (await tx`SELECT val FROM drv_items WHERE id = ${id}`)[0].val
  } else {
    const table = tbl('sp')
    await dropLater(t, sql, table)
    await simple(sql, `CREATE TABLE ${table} (id int PRIMARY KEY, val text)`)
    await simple(sql, `INSERT INTO ${table} VALUES (1, 'start')`)
    upd = (tx, v) => tx`UPDATE ${sql(table)} SET val = val || ${v} WHERE id = 1`
    sel = async (tx) => (await tx`SELECT val FROM ${sql(table)} WHERE id = 1`)[0].val
  }
  const result = await must(
    sql.begin(async (tx) => {
      await upd(tx, ' a') // the keyed statement that picks the shard
      await expectCode(
        tx.savepoint(async (sp) => {
          await upd(sp, ' b')
          await sp`SELECT 1/0`
        }),
        '22012',
        'error inside sql.savepoint',
      )
      await upd(tx, ' c')
      await tx.savepoint(async (sp) => upd(sp, ' d'))
      return sel(tx)
    }),
    'sql.begin with savepoints',
  )
  eq(result, 'start a c d', 'value inside the transaction')
  eq(await must(sel(sql), 'select after commit'), 'start a c d', 'value after COMMIT')
})

check('keyed_round_trips', async (t) => {
  const sql = connect(t)
  const first = ID_BASE + 600
  const n = 40
  await deleteIdsLater(t, sql, first, n)
  for (const id of ids(first, n)) {
    const r = await must(sql`INSERT INTO drv_items (id, val) VALUES (${id}, ${`v${id}`}) RETURNING id, val`, `INSERT ${id}`)
    eq(rows(r), [{ id: String(id), val: `v${id}` }], `INSERT ... RETURNING ${id}`)
  }
  for (const id of ids(first, n)) {
    eq(rows(await must(sql`SELECT val FROM drv_items WHERE id = ${id}`, `SELECT ${id}`)), [{ val: `v${id}` }], `SELECT ${id}`)
    const u = await must(sql`UPDATE drv_items SET val = ${`u${id}`} WHERE id = ${id}`, `UPDATE ${id}`)
    eq(u.count, 1, `UPDATE ${id} row count`)
  }
  eq(rows(await simple(sql, `SELECT val FROM drv_items WHERE id = ${first}`)), [{ val: `u${first}` }], 'simple keyed SELECT')
  const some = [first, first + 1, first + 2, first + 3]
  const r = await must(sql`SELECT id, val FROM drv_items WHERE id = ANY(${sql.array(some)}::bigint[])`, 'SELECT id = ANY')
  eq(r.map((x) => Number(x.id)).sort((a, b) => a - b), some, 'SELECT id = ANY(keys)')
  const all = await must(sql`SELECT count(*)::int AS n FROM drv_items WHERE id >= ${first} AND id < ${first + n}`, 'count')
  eq(all.reduce((s, x) => s + x.n, 0), n, 'rows over an id range (summed over shards)')
  for (const id of ids(first, n)) eq((await must(sql`DELETE FROM drv_items WHERE id = ${id}`, `DELETE ${id}`)).count, 1, `DELETE ${id}`)
})

check('fanout_error_recovery', async (t) => {
  const sql = connect(t)
  const id = ID_BASE + 700
  await deleteIdsLater(t, sql, id, 1)
  await insertIds(sql, [id], () => '0')
  const query = (s, d) => s`SELECT id FROM drv_items WHERE val = (1 / ${d})::text AND id >= ${ID_BASE + 700} AND id < ${ID_BASE + 800}`
  for (let i = 1; i <= 3; i++) {
    await expectCode(query(sql, 0), '22012', `divisor 0 (run ${i})`)
    eq(rows(await must(query(sql, 2), `divisor 2 (run ${i})`)), [{ id: String(id) }], `divisor 2 (run ${i})`)
  }
  const other = connect(t)
  eq(rows(await must(query(other, 2), 'new connection, divisor 2')), [{ id: String(id) }], 'new connection, divisor 2')
  await expectCode(query(other, 0), '22012', 'new connection, divisor 0')
})

check('describe_only', async (t) => {
  // .describe(): Parse+Describe+Flush, then Sync; nothing runs.
  const sql = connect(t)
  const d = await must(sql`SELECT val, id FROM drv_items WHERE id = ${1} AND val = ${'x'}`.describe(), 'describe a keyed statement')
  eq([d.types, d.columns.map((c) => [c.name, c.type])], [[20, 25], [['val', 25], ['id', 20]]], 'described types')
  const d2 = await must(sql`SELECT ${1}::int AS a, ${'b'}::text AS b`.describe(), 'describe a table-less statement')
  eq([d2.types, d2.columns.map((c) => c.name)], [[23, 25], ['a', 'b']], 'described table-less statement')
  await expectCode(sql`SELECT * FROM ${sql(tbl('no_such_table'))} WHERE id = ${1}`.describe(), '42P01', 'describe a missing table')
  eq(rows(await must(sql`SELECT ${5}::int AS x`, 'query after describe')), [{ x: 5 }], 'query after describe')
})

check('session_settings', async (t) => {
  // Two connections with their own settings, interleaved: in transaction
  // pooling each statement may run on any server connection.
  const a = connect(t, { connection: { application_name: 'drv_pgjs_a' } })
  const b = connect(t, { connection: { application_name: 'drv_pgjs_b' } })
  await simple(a, "SET TimeZone = 'Asia/Tokyo'")
  await must(b`SET TimeZone = 'America/New_York'`, 'SET TimeZone (tagged)')
  // The server's ParameterStatus after SET TimeZone reaches the driver.
  eq([a.parameters.TimeZone, b.parameters.TimeZone], ['Asia/Tokyo', 'America/New_York'], 'TimeZone ParameterStatus')
  for (let i = 0; i < 5; i++) {
    const ra = await must(a`SELECT current_setting('TimeZone') AS tz, current_setting('application_name') AS app, ${i}::int AS i`, 'client a')
    const rb = await must(b`SELECT current_setting('TimeZone') AS tz, current_setting('application_name') AS app, ${i}::int AS i`, 'client b')
    eq(rows(ra), [{ tz: 'Asia/Tokyo', app: 'drv_pgjs_a', i }], `client a settings (${i + 1})`)
    eq(rows(rb), [{ tz: 'America/New_York', app: 'drv_pgjs_b', i }], `client b settings (${i + 1})`)
  }
  const inTx = await must(
    a.begin(async (tx) => {
      if (env.sharded) await tx`SELECT val FROM drv_items WHERE id = ${ID_BASE + 800}`
      await tx`SET LOCAL TimeZone = 'UTC'`
      return (await tx`SHOW TimeZone`)[0].TimeZone
    }),
    'SET LOCAL in sql.begin',
  )
  eq(inTx, 'UTC', 'SET LOCAL inside the transaction')
  eq(rows(await must(a`SHOW TimeZone`, 'SHOW TimeZone')), [{ TimeZone: 'Asia/Tokyo' }], 'TimeZone after the SET LOCAL transaction')
  eq(a.parameters.TimeZone, 'Asia/Tokyo', 'TimeZone ParameterStatus after the SET LOCAL transaction')
})

check('begin_options', async (t) => {
  const sql = connect(t)
  const id = ID_BASE + 810
  await deleteIdsLater(t, sql, id, 1)
  await insertIds(sql, [id])
  const keyed = (tx) => tx`SELECT val FROM drv_items WHERE id = ${id}`
  const iso = await must(
    sql.begin('isolation level repeatable read', async (tx) => {
      await keyed(tx)
      return (await tx`SHOW transaction_isolation`)[0].transaction_isolation
    }),
    "sql.begin('isolation level repeatable read')",
  )
  eq(iso, 'repeatable read', "sql.begin('isolation level repeatable read')")
  await expectCode(
    sql.begin('read only', async (tx) => {
      await keyed(tx)
      await tx`UPDATE drv_items SET val = ${'y'} WHERE id = ${id}`
    }),
    '25006',
    "UPDATE in sql.begin('read only')",
  )
  eq(rows(await must(keyed(sql), 'keyed select after the read-only transaction')), [{ val: `v${id}` }], 'row after the read-only transaction')
})

check('large_values', async (t) => {
  const sql = connect(t)
  const { createHash } = await import('node:crypto')
  const text = 'é'.repeat(1 << 20) + 'xyz' // 2 MiB of UTF-8
  const h = createHash('md5').update(text).digest('hex')
  eq(rows(await must(sql`SELECT length(${text}::text) AS n, md5(${text}::text) AS h`, 'a 2 MiB text parameter')), [{ n: text.length, h }], '2 MiB text parameter')
  const bytes = Buffer.alloc(3 << 20, 7)
  const [r] = await must(sql`SELECT ${bytes}::bytea AS b`, 'a 3 MiB bytea parameter')
  assert(Buffer.isBuffer(r.b) && r.b.equals(bytes), '3 MiB bytea round trip')
  const id = ID_BASE + 820
  await deleteIdsLater(t, sql, id, 1)
  await must(sql`INSERT INTO drv_items (id, val) VALUES (${id}, ${text})`, 'keyed INSERT of 2 MiB')
  eq(rows(await must(sql`SELECT md5(val) AS h FROM drv_items WHERE id = ${id}`, 'keyed SELECT of 2 MiB')), [{ h }], 'keyed SELECT of 2 MiB')
  // Pipelined large binds.
  const all = await must(Promise.all(Array.from({ length: 8 }, (_, i) => sql`SELECT length(${text + i}::text) AS n`)), 'pipelined 2 MiB binds')
  eq(all.map((x) => x[0].n), Array.from({ length: 8 }, () => text.length + 1), 'pipelined 2 MiB binds')
})

check(
  'listen_notify',
  async (t) => {
    const sql = connect(t)
    const got = []
    await must(sql.listen('drv_pgjs_chan', (payload) => got.push(payload)), 'sql.listen')
    await must(sql.notify('drv_pgjs_chan', 'hello'), 'sql.notify')
    await must(sql`SELECT pg_notify(${'drv_pgjs_chan'}, ${'world'})`, 'pg_notify')
    const deadline = Date.now() + 5000
    while (got.length < 2 && Date.now() < deadline) await sleep(20)
    eq(got, ['hello', 'world'], 'notifications received')
  },
  { modes: ['session', 'transaction', 'sharded'] },
)

check('cancel', async (t) => {
  const sql = connect(t)
  for (let i = 1; i <= 2; i++) {
    const q = sql`SELECT pg_sleep(10)`
    const started = Date.now()
    setTimeout(() => q.cancel(), 300)
    await expectCode(withTimeout(q, 5000, 'cancelled pg_sleep(10)'), '57014', `cancel ${i}`)
    assert(Date.now() - started < 5000, `cancel ${i} took ${Date.now() - started} ms`)
    eq(rows(await must(sql`SELECT ${i}::int AS x`, `query after cancel ${i}`)), [{ x: i }], `query after cancel ${i}`)
  }
})

check(
  'concurrency',
  async (t) => {
    // Session pooling holds a server connection per client connection.
    const max = env.mode === 'session' ? env.poolSize : 32
    const sql = connect(t, { max })
    const first = ID_BASE + 1000
    const n = 200
    await deleteIdsLater(t, sql, first, n)
    await Promise.all(
      ids(first, n).map((id) =>
        must(
          sql.begin(async (tx) => {
            await tx`INSERT INTO drv_items (id, val) VALUES (${id}, ${`p${id}`})`
            eq(rows(await tx`SELECT val FROM drv_items WHERE id = ${id}`), [{ val: `p${id}` }], `transaction ${id}`)
          }),
          `transaction ${id}`,
        ),
      ),
    )
    const r = await must(sql`SELECT count(*)::int AS n FROM drv_items WHERE id >= ${first} AND id < ${first + n}`, 'count')
    eq(r.reduce((s, x) => s + x.n, 0), n, 'committed rows (summed over shards)')
  },
  { timeout: 30000 },
)

// ---------------------------------------------------------------------------
// Mode columns: tables the application creates.

const KEYED = 'id bigint PRIMARY KEY, val text'
const PLAIN = 'k text PRIMARY KEY, v text'
const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i)

/** Each shard's rows of `text`, read from the shard directly. */
async function perShard(text) {
  const out = []
  for (const { port, database } of shards()) {
    const direct = postgres({ host: env.host, port, user: env.user, password: env.password, database, max: 1, onnotice: () => {} })
    try {
      out.push([...(await must(direct.unsafe(text).values(), `${text} on ${database}`))])
    } finally {
      await direct.end({ timeout: 1 })
    }
  }
  return out
}

async function sharded(sql, table, columns, want) {
  const byKey = async (id) => [...(await must(sql.unsafe(`SELECT ${columns} FROM ${table} WHERE id = $1`, [id]).values(), `read id ${id}`))]
  await expectSharded(table, await perShard(`SELECT ${columns} FROM ${table}`), want, byKey)
}

async function copies(table, columns, want) {
  expectCopies(table, await perShard(`SELECT ${columns} FROM ${table}`), want)
}

/** Two connections (the second connected before any DDL) and this check's two tables. */
async function columnsSetup(t, name) {
  const a = connect(t)
  const b = connect(t)
  await simple(b, 'SELECT 1')
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
    await simple(a, `CREATE TABLE ${keyed} (${KEYED})`)
    await simple(b, `INSERT INTO ${keyed} VALUES (1, 'v1')`)
    await simple(b, `INSERT INTO ${keyed} (id, val) VALUES (2, 'v2')`)
    for (const i of range(3, 9)) await must(b`INSERT INTO ${b(keyed)} (id, val) VALUES (${i}, ${`v${i}`})`, `named INSERT ${i}`)
    for (const i of range(9, 17)) {
      await must(a.unsafe(`INSERT INTO ${keyed} VALUES ($1, $2)`, [i, `v${i}`], { prepare: false }), `unnamed INSERT ${i}`)
    }
    await sharded(a, keyed, 'id, val', range(1, 17).map((i) => [i, `v${i}`]))
    await simple(a, `CREATE TABLE ${plain} (${PLAIN})`)
    await simple(b, `INSERT INTO ${plain} VALUES ('s', 'simple')`)
    await must(b`INSERT INTO ${b(plain)} (k, v) VALUES (${'e'}, ${'extended'})`, 'named INSERT into the table without id')
    await copies(plain, 'k, v', [['s', 'simple'], ['e', 'extended']])
  },
  columnsOnly,
)

check(
  'columns_create_copy',
  async (t) => {
    const { a, keyed, plain } = await columnsSetup(t, 'cc')
    await simple(a, `CREATE TABLE ${keyed} (${KEYED})`)
    await must(copyIn(a`COPY ${a(keyed)} (id, val) FROM STDIN`, copyText(range(1, 21).map((i) => [i, `v${i}`]))), 'COPY with a column list')
    await must(copyIn(a`COPY ${a(keyed)} FROM STDIN`, copyText(range(21, 31).map((i) => [i, `v${i}`]))), 'COPY without a column list')
    const csv = range(31, 41).map((i) => `${i},v${i}\n`).join('')
    await must(copyIn(a`COPY ${a(keyed)} FROM STDIN (FORMAT csv)`, csv), 'COPY csv')
    await sharded(a, keyed, 'id, val', range(1, 41).map((i) => [i, `v${i}`]))
    await simple(a, `CREATE TABLE ${plain} (${PLAIN})`)
    const plainRows = range(0, 3).map((i) => [`k${i}`, `v${i}`])
    await must(copyIn(a`COPY ${a(plain)} FROM STDIN`, copyText(plainRows)), 'COPY into the table without id')
    await copies(plain, 'k, v', plainRows)
  },
  columnsOnly,
)

check(
  'columns_add_column',
  async (t) => {
    const { a, b, keyed, plain } = await columnsSetup(t, 'ac')
    await simple(a, `CREATE TABLE ${keyed} (${KEYED})`)
    await simple(a, `CREATE TABLE ${plain} (${PLAIN})`)
    await must(b`INSERT INTO ${b(keyed)} (id, val) VALUES (${1}, ${'v1'})`, 'INSERT before')
    await must(b`INSERT INTO ${b(plain)} (k, v) VALUES (${'a'}, ${'before'})`, 'INSERT before')
    await simple(a, `ALTER TABLE ${keyed} ADD COLUMN note text`)
    await simple(b, `INSERT INTO ${keyed} (id, val, note) VALUES (2, 'v2', 'n2')`)
    await simple(b, `INSERT INTO ${keyed} VALUES (3, 'v3', 'n3')`)
    for (const i of range(4, 9)) {
      await must(b`INSERT INTO ${b(keyed)} (id, val, note) VALUES (${i}, ${`v${i}`}, ${`n${i}`})`, `named INSERT ${i}`)
    }
    await must(a.unsafe(`INSERT INTO ${keyed} VALUES ($1, $2, $3)`, [9, 'v9', 'n9'], { prepare: false }), 'unnamed INSERT without a column list')
    const rows = range(10, 17).map((i) => [i, `v${i}`, `n${i}`])
    await must(copyIn(b`COPY ${b(keyed)} (id, val, note) FROM STDIN`, copyText(rows)), 'COPY of the new column')
    const want = [[1, 'v1', null], ...range(2, 17).map((i) => [i, `v${i}`, `n${i}`])]
    await sharded(a, keyed, 'id, val, note', want)
    await simple(a, `ALTER TABLE ${plain} ADD COLUMN note text`)
    await simple(b, `INSERT INTO ${plain} VALUES ('s', 'simple', 'n')`)
    await must(b`INSERT INTO ${b(plain)} (k, v, note) VALUES (${'e'}, ${'ext'}, ${'n'})`, 'named INSERT of the new column')
    await copies(plain, 'k, v, note', [['a', 'before', null], ['s', 'simple', 'n'], ['e', 'ext', 'n']])
  },
  columnsOnly,
)

check(
  'columns_in_transaction',
  async (t) => {
    const { a: sql, keyed, plain } = await columnsSetup(t, 'tx')
    await must(
      sql.begin(async (tx) => {
        await tx.unsafe(`CREATE TABLE ${keyed} (${KEYED})`)
        await must(tx.unsafe(`INSERT INTO ${keyed} VALUES (1, 'v1')`), 'simple INSERT')
        for (const i of range(2, 9)) await must(tx`INSERT INTO ${tx(keyed)} (id, val) VALUES (${i}, ${`v${i}`})`, `named INSERT ${i}`)
        await must(copyIn(tx`COPY ${tx(keyed)} (id, val) FROM STDIN`, copyText(range(9, 17).map((i) => [i, `v${i}`]))), 'COPY')
        await tx.unsafe(`CREATE TABLE ${plain} (${PLAIN})`)
        await must(tx`INSERT INTO ${tx(plain)} (k, v) VALUES (${'a'}, ${'1'})`, 'INSERT into the table without id')
        await tx.unsafe(`ALTER TABLE ${keyed} ADD COLUMN note text`)
        await must(tx`INSERT INTO ${tx(keyed)} (id, val, note) VALUES (${17}, ${'v17'}, ${'n'})`, 'INSERT of the new column')
      }),
      'the transaction',
    )
    const want = [...range(1, 17).map((i) => [i, `v${i}`, null]), [17, 'v17', 'n']]
    await sharded(sql, keyed, 'id, val, note', want)
    await copies(plain, 'k, v', [['a', '1']])
  },
  columnsOnly,
)

check(
  'columns_add_key_refused',
  async (t) => {
    // A table without id is omnisharded (every shard holds all its rows):
    // given id it would be sharded by it with every row still everywhere.
    const { a: sql, plain } = await columnsSetup(t, 'kr')
    await simple(sql, `CREATE TABLE ${plain} (${PLAIN})`)
    await simple(sql, `INSERT INTO ${plain} VALUES ('a', '1')`)
    const e = await expectCode(sql.unsafe(`ALTER TABLE ${plain} ADD COLUMN id bigint`), '0A000', 'adding the key column')
    assert(e.message.includes('omnisharded') && e.message.includes(plain), `the refusal does not say why: ${describe(e)}`)
    await must(sql`INSERT INTO ${sql(plain)} (k, v) VALUES (${'b'}, ${'2'})`, 'INSERT after the refusal')
    await copies(plain, 'k, v', [['a', '1'], ['b', '2']])
  },
  columnsOnly,
)

if (env.adminUser) {
  check('admin_show_pools', async (t) => {
    await sleep(300)
    // The admin console answers the simple protocol only: no type fetching.
    const admin = connect(t, { user: env.adminUser, password: env.adminPassword, database: 'admin', fetch_types: false })
    const pools = rows(await must(admin.unsafe('SHOW POOLS'), 'SHOW POOLS'))
    assert(pools.length > 0, 'SHOW POOLS returned no rows')
    assert('cl_active' in pools[0], `SHOW POOLS has no cl_active column: ${Object.keys(pools[0]).join(',')}`)
    for (const row of pools) {
      for (const col of ['cl_active', 'cl_waiting', 'sv_active', 'sv_idle', 'sv_used', 'sv_tested', 'sv_login']) {
        if (!(col in row)) continue
        const v = Number(row[col])
        assert(Number.isInteger(v) && v >= 0 && v <= 1000, `SHOW POOLS ${row.database}/${row.user}: ${col} = ${row[col]}`)
      }
    }
    await must(admin.unsafe('SHOW CLIENTS'), 'SHOW CLIENTS')
  })
}

await run(DRIVER)
