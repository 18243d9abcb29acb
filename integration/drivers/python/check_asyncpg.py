"""asyncpg against pgshard.

asyncpg always prepares (Parse + Describe + Sync, then Bind/Execute; named
statements from its statement cache, the unnamed one with
statement_cache_size=0) and sends binary parameters. Checks: statements
around DDL that changes result and parameter types (cached and uncached);
32767 parameters and asyncpg's own refusal of 32768; executemany (its
pipelined Bind/Execute, one Sync: atomic) and prepared statements reused;
cursors with prefetch inside transactions (keyless and keyed); COPY
(copy_records_to_table, copy_from_query, copy_from_table); transactions with
errors, savepoints and nested transaction blocks; LISTEN/NOTIFY with
add_listener (also in transaction mode); a query timeout cancelling pg_sleep; 32
concurrent connections, and (transaction pooling) a pool of 32 connections,
over the 4-connection server pool; startup parameters and SET following each
client; statements failing at
execution or at describe, repeated; a fanned-out statement failing at run
time then working; keyed round trips with binary parameters; many types
binary both ways; the admin console's SHOW POOLS.

Mode columns (two shards, only a column-only entry on `id`, no table): the
application's own tables, created and written at once (issue 39) by the
connection that created them and by another one opened before: INSERT with
the simple protocol (execute without arguments) and the extended one
(cached, uncached, executemany), COPY (copy_records_to_table, binary, after
asyncpg's own introspection of the table; copy_to_table in CSV), inside a
transaction too; ALTER TABLE ADD COLUMN followed at once by writes of the new
column; adding the key column to a table without it refused. Where the rows
landed is read from each shard directly.

Every expectation is what asyncpg gets from Postgres directly (the checks
pass when PGSHARD_PORT points at a shard, PGSHARD_DATABASE=shard_0 and
PGSHARD_MODE=session).
"""

import asyncio
import io
import time

import asyncpg

from common import CheckFailed, Runner, describe, expect, expect_eq, expect_copies, expect_sharded

R = Runner("asyncpg")
ENV = R.env


async def connect(ctx, **kw):
    e = ctx.env
    c = await asyncpg.connect(
        host=e.host, port=e.port, user=e.user, password=e.password, database=e.database, timeout=10, **kw
    )
    ctx.conns.append(c)
    return c


async def expect_error(aw, sqlstate, what):
    try:
        got = await aw
    except asyncpg.PostgresError as e:
        if e.sqlstate != sqlstate:
            raise CheckFailed(f"{what}: want SQLSTATE {sqlstate}, got {describe(e)}")
        return e
    except Exception as e:
        raise CheckFailed(f"{what}: want SQLSTATE {sqlstate}, got {describe(e)}")
    raise CheckFailed(f"{what}: want SQLSTATE {sqlstate}, got success ({got!r})")


async def step(what, aw):
    try:
        return await aw
    except Exception as e:
        raise CheckFailed(f"{what}: {describe(e)}") from e


def pin(sql):
    """A keyless INSERT into a scratch table names a shard when sharded."""
    return f"/* pgdog_shard: 0 */ {sql}" if ENV.sharded else sql


def other_shard():
    return 1 if ENV.shards > 1 else 0


# 1. Statements around DDL ---------------------------------------------------

async def ddl_cached_select(ctx):
    # Statement cache on: asyncpg re-prepares after "cached plan must not
    # change result type" outside a transaction, as on Postgres.
    c = await connect(ctx)
    t = ctx.table()
    q = f"select x from {t} where $1::int = 1"
    await c.execute(f"create table {t}(x int)")
    await step("select on int table", c.fetch(q, 0))
    await c.execute(f"drop table {t}")
    await c.execute(f"create table {t}(x text)")
    for i in range(3):
        expect_eq(await step(f"select after DDL #{i + 1}", c.fetch(q, 0)), [], "rows")


async def ddl_uncached(ctx):
    # statement_cache_size=0: the unnamed statement, Parse+Describe, then
    # Parse+Bind+Execute again.
    c = await connect(ctx, statement_cache_size=0)
    t = ctx.table()
    q = f"select x from {t} where $1::int = 1"
    qi = pin(f"insert into {t} values ($1) returning *")
    await c.execute(f"create table {t}(x int)")
    await step("select on int table", c.fetch(q, 0))
    expect_eq(await step("insert into int table", c.fetchval(qi, 5)), 5, "int insert")
    await c.execute(f"drop table {t}")
    await c.execute(f"create table {t}(x text)")
    expect_eq(await step("select after DDL", c.fetch(q, 0)), [], "rows")
    expect_eq(await step("insert after DDL", c.fetchval(qi, "abc")), "abc", "text insert")


# 2. Parameter counts --------------------------------------------------------

async def params_32767(ctx):
    c = await connect(ctx)
    n = 32767
    q = "SELECT cardinality(ARRAY[" + ",".join(f"${i}::int" for i in range(1, n + 1)) + "])"
    expect_eq(await step(f"{n} parameters", c.fetchval(q, *range(n))), n, "cardinality")
    q2 = "SELECT cardinality(ARRAY[" + ",".join(f"${i}::int" for i in range(1, n + 2)) + "])"
    try:
        await c.fetchval(q2, *range(n + 1))
        raise CheckFailed("32768 arguments were not refused (asyncpg refuses them itself)")
    except (asyncpg.InterfaceError, asyncpg.PostgresError):
        pass
    expect_eq(await step("select after", c.fetchval("select $1::int", 5)), 5, "after")


# 3. executemany and prepared statements ----------------------------------------

async def executemany_keys(ctx):
    c = await connect(ctx)
    k = ctx.keys(10, 0) + ctx.keys(10, other_shard())
    await step("executemany", c.executemany("insert into drv_items (id, val) values ($1, $2)", [(key, f"v{key}") for key in k]))
    for key in k:
        expect_eq(await c.fetchval("select val from drv_items where id = $1", key), f"v{key}", f"id {key}")


async def executemany_error_atomic(ctx):
    # executemany is atomic: a duplicate in the middle inserts nothing.
    c = await connect(ctx)
    k = ctx.keys(4)
    ins = "insert into drv_items (id, val) values ($1, $2)"
    await c.execute("insert into drv_items (id, val) values ($1, 'pre')", k[0])
    await expect_error(c.executemany(ins, [(k[1], "a"), (k[0], "dup"), (k[2], "b")]), "23505", "duplicate in executemany")
    got = [await c.fetchval("select val from drv_items where id = $1", key) for key in k[:3]]
    expect_eq(got, ["pre", None, None], "rows after the failed executemany")
    await step("executemany after", c.executemany(ins, [(k[1], "a"), (k[3], "d")]))
    got = [await c.fetchval("select val from drv_items where id = $1", key) for key in k]
    expect_eq(got, ["pre", "a", None, "d"], "rows")


async def prepared_reuse(ctx):
    c = await connect(ctx)
    k = ctx.keys(3, 0) + ctx.keys(3, other_shard())
    ins = await c.prepare("insert into drv_items (id, val) values ($1, $2) returning id")
    sel = await c.prepare("select val from drv_items where id = $1")
    for key in k:
        expect_eq(await ins.fetchval(key, f"p{key}"), key, "insert returning")
    for _ in range(2):
        for key in k:
            expect_eq(await sel.fetchval(key), f"p{key}", f"id {key}")
    expect_eq([a.name for a in sel.get_attributes()], ["val"], "attributes")
    expect_eq([t.name for t in sel.get_parameters()], ["int8"], "parameter types")


# 4. Cursors -----------------------------------------------------------------

async def cursor_keyless(ctx):
    c = await connect(ctx)
    async with c.transaction():
        got = [r[0] async for r in c.cursor("SELECT g FROM generate_series(1, 1000) g", prefetch=10)]
    expect_eq(got, list(range(1, 1001)), "rows")


async def cursor_fetch_forward(ctx):
    c = await connect(ctx)
    async with c.transaction():
        cur = await c.cursor("SELECT g FROM generate_series(1, $1::int) g", 100)
        a = [r[0] for r in await cur.fetch(5)]
        await cur.forward(10)
        b = (await cur.fetchrow())[0]
        rest = await cur.fetch(1000)
    expect_eq((a, b, len(rest)), ([1, 2, 3, 4, 5], 16, 84), "fetch/forward/fetchrow")


async def cursor_keyed(ctx):
    c = await connect(ctx)
    (key,) = ctx.keys(1)
    async with c.transaction():
        await c.execute("insert into drv_items (id, val) values ($1, 'cur')", key)
        got = [tuple(r) async for r in c.cursor("SELECT id, val FROM drv_items WHERE id = $1", key, prefetch=1)]
    expect_eq(got, [(key, "cur")], "rows")


async def cursor_table(ctx):
    # A cursor (a portal fetched with a row limit) over the whole (sharded)
    # table in order: the same rows as the plain fetch, whatever the
    # prefetch; fetch, forward (MOVE) and fetch again.
    c = await connect(ctx)
    (key,) = ctx.keys(1)
    async with c.transaction():
        await c.execute("insert into drv_items (id, val) values ($1, 'tab')", key)
    q = "SELECT id, val FROM drv_items ORDER BY val DESC, id"
    async with c.transaction():
        want = [tuple(r) for r in await c.fetch(q)]
    expect(len(want) > 0, "drv_items has rows")
    for prefetch in (1, 3, 1000):
        async with c.transaction():
            got = [tuple(r) async for r in c.cursor(q, prefetch=prefetch)]
        expect_eq(got, want, f"rows with prefetch {prefetch}")
    async with c.transaction():
        cur = await c.cursor(q)
        a = [tuple(r) for r in await cur.fetch(2)]
        await cur.forward(3)
        rest = [tuple(r) for r in await cur.fetch(100000)]
    expect_eq(a + rest, want[:2] + want[5:], "fetch, forward, fetch")


# 5. COPY --------------------------------------------------------------------

async def copy_roundtrip(ctx):
    c = await connect(ctx)
    t = ctx.table()
    await c.execute(f"create table {t} (id int, val text)")
    rows = [(i, f"row {i}") for i in range(1000)]
    res = await step("copy_records_to_table", c.copy_records_to_table(t, records=rows, columns=["id", "val"]))
    expect_eq(res, "COPY 1000", "copy_records_to_table status")
    buf = io.BytesIO()
    await step("copy_from_table", c.copy_from_table(t, output=buf, columns=["id", "val"]))
    expect_eq(len(buf.getvalue().splitlines()), 1000, "copy_from_table lines")
    buf = io.BytesIO()
    await step("copy_from_query", c.copy_from_query(f"SELECT id, val FROM {t} WHERE id < $1 ORDER BY id", 3, output=buf))
    expect_eq(buf.getvalue(), b"0\trow 0\n1\trow 1\n2\trow 2\n", "copy_from_query data")
    expect_eq(await c.fetchval("select $1::int", 3), 3, "after COPY")


async def copy_keyed_query(ctx):
    c = await connect(ctx)
    (key,) = ctx.keys(1)
    await c.execute("insert into drv_items (id, val) values ($1, 'copy me')", key)
    buf = io.BytesIO()
    await step("copy_from_query", c.copy_from_query("SELECT id, val FROM drv_items WHERE id = $1", key, output=buf))
    expect_eq(buf.getvalue(), f"{key}\tcopy me\n".encode(), "data")


async def copy_records_drv_items(ctx):
    # Works, or (sharded, for now) is refused with an error; the connection
    # keeps working and no row lands on the wrong shard.
    c = await connect(ctx)
    k = ctx.keys(3, 0) + ctx.keys(3, other_shard())
    refused = None
    try:
        await c.copy_records_to_table("drv_items", records=[(key, f"c{key}") for key in k], columns=["id", "val"])
    except asyncpg.PostgresError as e:
        refused = e
    if refused is not None and not ENV.sharded:
        raise CheckFailed(f"COPY refused: {describe(refused)}")
    expect_eq(await step("select after COPY", c.fetchval("select $1::int", 1)), 1, "after COPY")
    got = [await c.fetchval("select val from drv_items where id = $1", key) for key in k]
    want = [None] * len(k) if refused is not None else [f"c{key}" for key in k]
    expect_eq(got, want, "rows after COPY" + (" (refused)" if refused is not None else ""))


# 6. Transactions ------------------------------------------------------------

async def txn_error_aborts(ctx):
    c = await connect(ctx)
    # Simple protocol (execute without arguments).
    await c.execute("BEGIN")
    await expect_error(c.execute("SELECT 1/0"), "22012", "1/0")
    await expect_error(c.execute("SELECT 1"), "25P02", "simple SELECT 1 after the error")
    await expect_error(c.fetchval("SELECT 1"), "25P02", "extended SELECT 1 after the error")
    await c.execute("ROLLBACK")
    expect_eq(await c.fetchval("SELECT 1"), 1, "after ROLLBACK")


async def txn_error_aborts_keyed(ctx):
    c = await connect(ctx)
    (key,) = ctx.keys(1)
    tr = c.transaction()
    await tr.start()
    await c.fetch("select val from drv_items where id = $1", key)
    await expect_error(c.fetchval("SELECT 1/$1::int", 0), "22012", "1/0")
    await expect_error(c.fetch("select val from drv_items where id = $1", key), "25P02", "keyed select after the error")
    await tr.rollback()
    expect_eq(await c.fetchval("SELECT $1::int", 1), 1, "after ROLLBACK")


async def txn_nested(ctx):
    c = await connect(ctx)
    k = ctx.keys(4)
    ins = "insert into drv_items (id, val) values ($1, $2)"
    async with c.transaction():
        await c.execute(ins, k[0], "outer")
        try:
            async with c.transaction():  # SAVEPOINT
                await c.execute(ins, k[1], "inner")
                await c.execute(ins, k[0], "dup")
        except asyncpg.UniqueViolationError:
            pass
        async with c.transaction():
            await c.execute(ins, k[2], "inner2")
        await c.execute(ins, k[3], "outer2")
    expect(not c.is_in_transaction(), "still in a transaction")
    got = [await c.fetchval("select val from drv_items where id = $1", key) for key in k]
    expect_eq(got, ["outer", None, "inner2", "outer2"], "rows")


async def txn_rollback_block(ctx):
    c = await connect(ctx)
    k = ctx.keys(1)
    try:
        async with c.transaction(isolation="repeatable_read"):
            await c.execute("insert into drv_items (id, val) values ($1, 'x')", k[0])
            raise RuntimeError("rollback please")
    except RuntimeError:
        pass
    expect_eq(await c.fetchval("select val from drv_items where id = $1", k[0]), None, "row after rollback")


# 7. LISTEN/NOTIFY (in transaction mode through pgshard's relay) -------------

async def listen_notify(ctx):
    a = await connect(ctx)
    b = await connect(ctx)
    got = asyncio.Queue()
    await a.add_listener("drv_asyncpg_chan", lambda _c, _pid, ch, payload: got.put_nowait((ch, payload)))
    await b.execute("NOTIFY drv_asyncpg_chan, 'hello'")
    await b.execute("SELECT pg_notify('drv_asyncpg_chan', $1)", "again")
    first = await asyncio.wait_for(got.get(), 5)
    second = await asyncio.wait_for(got.get(), 5)
    expect_eq([first, second], [("drv_asyncpg_chan", "hello"), ("drv_asyncpg_chan", "again")], "notifications")


# 8. Cancel ------------------------------------------------------------------

async def cancel_timeout(ctx):
    c = await connect(ctx)
    expect_eq(await c.fetchval("select 1"), 1, "warm-up")
    t0 = time.monotonic()
    try:
        await c.fetch("SELECT pg_sleep(10)", timeout=0.5)
        raise CheckFailed("pg_sleep(10) with timeout=0.5 returned")
    except asyncio.TimeoutError:
        pass
    expect_eq(await step("select after cancel", c.fetchval("select $1::int", 2)), 2, "after cancel")
    took = time.monotonic() - t0
    expect(took < 5, f"cancel and next query took {took:.1f} s")


async def cancel_in_transaction(ctx):
    c = await connect(ctx)
    (key,) = ctx.keys(1)
    tr = c.transaction()
    await tr.start()
    await c.execute("insert into drv_items (id, val) values ($1, 'sleep')", key)
    try:
        await c.fetch("SELECT pg_sleep(10) FROM drv_items WHERE id = $1", key, timeout=0.5)
        raise CheckFailed("no timeout")
    except asyncio.TimeoutError:
        pass
    await expect_error(c.fetchval("select 1 from drv_items where id = $1", key), "25P02", "after cancel in transaction")
    await tr.rollback()
    expect_eq(await c.fetchval("select $1::int", 2), 2, "after rollback")


# 9. Concurrency -------------------------------------------------------------

async def pool_concurrency(ctx):
    # A pool of 32 client connections over 4 server connections: transaction
    # pooling only (with session pooling an open client keeps its server).
    e = ctx.env
    n, per = 32, 4
    k = ctx.keys(n * per // 2, 0) + ctx.keys(n * per // 2, other_shard())
    pool = await asyncpg.create_pool(
        host=e.host, port=e.port, user=e.user, password=e.password, database=e.database,
        min_size=n, max_size=n, timeout=10,
    )
    ctx.conns.append(pool)

    async def client(i):
        for j in range(per):
            key = k[i * per + j]
            async with pool.acquire() as c:
                async with c.transaction():
                    await c.execute("insert into drv_items (id, val) values ($1, $2)", key, f"t{i}")
                    got = await c.fetchval("select val from drv_items where id = $1", key)
                    if got != f"t{i}":
                        raise CheckFailed(f"client {i}: read {got!r}")

    res = await asyncio.gather(*(client(i) for i in range(n)), return_exceptions=True)
    errs = [r for r in res if isinstance(r, BaseException)]
    expect(not errs, f"{len(errs)} clients failed, e.g. {describe(errs[0]) if errs else ''}")
    await asyncio.wait_for(pool.close(), 5)


async def concurrent_connections(ctx):
    # 32 clients at once, each connecting, running short transactions and
    # disconnecting: every mode, session pooling included.
    n, per = 32, 3
    k = ctx.keys(n * per // 2, 0) + ctx.keys(n * per - n * per // 2, other_shard())

    async def client(i):
        c = await connect(ctx)
        try:
            for j in range(per):
                key = k[i * per + j]
                async with c.transaction():
                    await c.execute("insert into drv_items (id, val) values ($1, $2)", key, f"t{i}")
                    got = await c.fetchval("select val from drv_items where id = $1", key)
                    if got != f"t{i}":
                        raise CheckFailed(f"client {i}: read {got!r}")
            await c.close(timeout=5)
        finally:
            c.terminate()

    res = await asyncio.gather(*(client(i) for i in range(n)), return_exceptions=True)
    errs = [r for r in res if isinstance(r, BaseException)]
    expect(not errs, f"{len(errs)} clients failed, e.g. {describe(errs[0]) if errs else ''}")


async def startup_settings(ctx):
    # Startup parameters (server_settings) follow each client over the
    # shared server connections, and so does a later SET.
    n = 8

    async def client(i):
        c = await connect(ctx, server_settings={"application_name": f"drv_asyncpg_{i}", "search_path": f"s{i},public"})
        try:  # a failed client must not keep its (session mode) server
            for r in range(4):
                got = tuple(await c.fetchrow(
                    "SELECT current_setting('application_name'), current_setting('search_path'), $1::int", i))
                expect_eq(got, (f"drv_asyncpg_{i}", f"s{i},public" if r < 2 else f"t{i}", i), f"client {i} round {r}")
                if r == 1:
                    await c.execute(f"SET search_path = t{i}")
                await asyncio.sleep(0.01)
        finally:
            c.terminate()

    res = await asyncio.gather(*(client(i) for i in range(n)), return_exceptions=True)
    errs = [r for r in res if isinstance(r, BaseException)]
    expect(not errs, f"{len(errs)} clients failed, e.g. {describe(errs[0]) if errs else ''}")


# 10. Failing statements, repeated -------------------------------------------

async def exec_error_repeated(ctx):
    c = await connect(ctx)
    for i in range(3):
        await expect_error(c.fetch("select 1/0"), "22012", f"select 1/0 #{i + 1}")
    for i in range(3):
        await expect_error(c.fetchval("select 1/$1::int", 0), "22012", f"select 1/$1 #{i + 1}")
    expect_eq(await c.fetchval("select 1/$1::int", 1), 1, "good execution")


async def exec_error_repeated_uncached(ctx):
    c = await connect(ctx, statement_cache_size=0)
    for i in range(3):
        await expect_error(c.fetch("select 1/0"), "22012", f"select 1/0 #{i + 1}")
    expect_eq(await c.fetchval("select 1/$1::int", 1), 1, "good execution")


async def describe_error_repeated(ctx):
    c = await connect(ctx)
    for i in range(3):
        await expect_error(c.fetch("select * from drv_asyncpg_no_such_table"), "42P01", f"missing table #{i + 1}")
    expect_eq(await c.fetchval("select $1::int", 1), 1, "good query")


# 11. Fan-out failures, keyed binary round trips, types --------------------------

async def fanout_runtime_error(ctx):
    c = await connect(ctx)
    q = "SELECT id FROM drv_items WHERE val = (1 / $1::int)::text"
    for i in range(2):
        await expect_error(c.fetch(q, 0), "22012", f"with 0 #{i + 1}")
        await step(f"with 2 #{i + 1}", c.fetch(q, 2))


async def keyed_binary(ctx):
    c = await connect(ctx)
    k = ctx.keys(3, 0) + ctx.keys(3, other_shard())
    for key in k:
        await c.execute("insert into drv_items (id, val) values ($1, $2)", key, f"b{key}")
    for key in k:
        expect_eq(tuple(await c.fetchrow("select id, val from drv_items where id = $1", key)), (key, f"b{key}"), f"id {key}")
        expect_eq(await c.fetchval("update drv_items set val = $2 where id = $1 returning val", key, "u"), "u", f"update {key}")
        expect_eq(await c.execute("delete from drv_items where id = $1", key), "DELETE 1", f"delete {key}")


async def types_roundtrip(ctx):
    import datetime
    import decimal
    import json
    import uuid

    c = await connect(ctx)
    vals = (
        decimal.Decimal("12345678901234567890.0123456789"),
        datetime.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=datetime.timezone.utc),
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        b"\x00\x01\xffbytes",
        [1, 2, None, 4],
        "snow \u2603",
        3.5,
        True,
        datetime.date(2000, 1, 1),
        datetime.timedelta(days=1, seconds=5),
        json.dumps({"a": [1, "x"]}),
    )
    q = ("select $1::numeric, $2::timestamptz, $3::uuid, $4::bytea, $5::int[], $6::text, $7::float8, "
         "$8::bool, $9::date, $10::interval, $11::jsonb")
    got = await c.fetchrow(q, *vals)
    expect_eq(tuple(got[:-1]), vals[:-1], "values")
    expect_eq(json.loads(got[-1]), {"a": [1, "x"]}, "jsonb")
    # A type asyncpg has no built-in codec for: the introspection query.
    expect_eq(await c.fetchval("select $1::int4range", asyncpg.Range(1, 5)), asyncpg.Range(1, 5), "int4range")


# 12. Admin console ------------------------------------------------------------

async def admin_show_pools(ctx):
    e = ctx.env
    c = await asyncpg.connect(host=e.host, port=e.port, user=e.admin_user, password=e.admin_password,
                              database="admin", timeout=10)
    ctx.conns.append(c)
    # The console speaks the simple protocol: asyncpg's execute() (no
    # arguments) uses it but returns no rows, so read them with psycopg.
    await step("SHOW POOLS", c.execute("SHOW POOLS"))

    def show():
        import psycopg

        with psycopg.connect(e.conninfo(user=e.admin_user, password=e.admin_password, dbname="admin"),
                             autocommit=True) as p:
            cur = p.execute("SHOW POOLS")
            cols = [d.name for d in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]

    rows = await asyncio.to_thread(show)
    expect(rows, "SHOW POOLS returned no rows")
    for r in rows:
        for col, v in r.items():
            if col.startswith(("cl_", "sv_")):
                expect(int(v) < 1_000_000, f"SHOW POOLS {col} = {v} (row {r})")


# 13. Tables the application creates (mode columns) ------------------------------

KEYED = "id bigint PRIMARY KEY, val text"
PLAIN = "k text PRIMARY KEY, v text"


async def sharded(table, columns, want):
    await asyncio.to_thread(expect_sharded, ENV, table, columns, want)


async def copies(table, columns, want):
    await asyncio.to_thread(expect_copies, ENV, table, columns, want)


async def columns_create_insert(ctx):
    a, b = await connect(ctx), await connect(ctx)
    u = await connect(ctx, statement_cache_size=0)
    keyed, plain = ctx.table("_k"), ctx.table("_p")
    await a.execute(f"CREATE TABLE {keyed} ({KEYED})")
    await step("simple INSERT without a column list", b.execute(f"INSERT INTO {keyed} VALUES (1, 'v1')"))
    await step("simple INSERT", u.execute(f"INSERT INTO {keyed} (id, val) VALUES (2, 'v2')"))
    for i in range(3, 7):
        await step(f"extended INSERT {i}", b.execute(f"INSERT INTO {keyed} (id, val) VALUES ($1, $2)", i, f"v{i}"))
    for i in range(7, 11):
        await step(f"uncached INSERT {i}", u.execute(f"INSERT INTO {keyed} VALUES ($1, $2)", i, f"v{i}"))
    await step("executemany", a.executemany(f"INSERT INTO {keyed} (id, val) VALUES ($1, $2)", [(i, f"v{i}") for i in range(11, 17)]))
    await sharded(keyed, "id, val", [(i, f"v{i}") for i in range(1, 17)])
    await a.execute(f"CREATE TABLE {plain} ({PLAIN})")
    await step("simple INSERT into the table without id", b.execute(f"INSERT INTO {plain} VALUES ('s', 'simple')"))
    await step("extended INSERT into it", u.execute(f"INSERT INTO {plain} (k, v) VALUES ($1, $2)", "e", "extended"))
    await copies(plain, "k, v", [("s", "simple"), ("e", "extended")])


async def columns_create_copy(ctx):
    a = await connect(ctx)
    keyed, plain = ctx.table("_k"), ctx.table("_p")
    await a.execute(f"CREATE TABLE {keyed} ({KEYED})")
    res = await step("copy_records_to_table", a.copy_records_to_table(keyed, records=[(i, f"v{i}") for i in range(1, 21)]))
    expect_eq(res, "COPY 20", "copy_records_to_table status")
    csv = "".join(f"{i},v{i}\n" for i in range(21, 41)).encode()
    res = await step("copy_to_table csv", a.copy_to_table(keyed, source=io.BytesIO(csv), columns=["id", "val"], format="csv"))
    expect_eq(res, "COPY 20", "copy_to_table status")
    await sharded(keyed, "id, val", [(i, f"v{i}") for i in range(1, 41)])
    await a.execute(f"CREATE TABLE {plain} ({PLAIN})")
    await step("copy_records_to_table without id", a.copy_records_to_table(plain, records=[(f"k{i}", f"v{i}") for i in range(3)]))
    await copies(plain, "k, v", [(f"k{i}", f"v{i}") for i in range(3)])


async def columns_add_column(ctx):
    a, b = await connect(ctx), await connect(ctx)
    keyed, plain = ctx.table("_k"), ctx.table("_p")
    await a.execute(f"CREATE TABLE {keyed} ({KEYED})")
    await a.execute(f"CREATE TABLE {plain} ({PLAIN})")
    await b.execute(f"INSERT INTO {keyed} (id, val) VALUES ($1, $2)", 1, "v1")
    await b.execute(f"INSERT INTO {plain} (k, v) VALUES ($1, $2)", "a", "before")
    await a.execute(f"ALTER TABLE {keyed} ADD COLUMN note text")
    await step("simple INSERT of the new column", b.execute(f"INSERT INTO {keyed} (id, val, note) VALUES (2, 'v2', 'n2')"))
    await step("simple INSERT without a column list", b.execute(f"INSERT INTO {keyed} VALUES (3, 'v3', 'n3')"))
    for i in range(4, 9):
        await step(f"extended INSERT {i}", b.execute(f"INSERT INTO {keyed} (id, val, note) VALUES ($1, $2, $3)", i, f"v{i}", f"n{i}"))
    await step("extended INSERT without a column list", a.execute(f"INSERT INTO {keyed} VALUES ($1, $2, $3)", 9, "v9", "n9"))
    await step("copy_records_to_table of the new column",
               b.copy_records_to_table(keyed, records=[(i, f"v{i}", f"n{i}") for i in range(10, 17)]))
    want = [(1, "v1", None)] + [(i, f"v{i}", f"n{i}") for i in range(2, 17)]
    await sharded(keyed, "id, val, note", want)
    await a.execute(f"ALTER TABLE {plain} ADD COLUMN note text")
    await step("simple INSERT of the new column", b.execute(f"INSERT INTO {plain} VALUES ('s', 'simple', 'n')"))
    await step("extended INSERT of it", b.execute(f"INSERT INTO {plain} (k, v, note) VALUES ($1, $2, $3)", "e", "ext", "n"))
    await copies(plain, "k, v, note", [("a", "before", None), ("s", "simple", "n"), ("e", "ext", "n")])


async def columns_in_transaction(ctx):
    c = await connect(ctx)
    keyed, plain = ctx.table("_k"), ctx.table("_p")
    async with c.transaction():
        await c.execute(f"CREATE TABLE {keyed} ({KEYED})")
        await step("simple INSERT", c.execute(f"INSERT INTO {keyed} VALUES (1, 'v1')"))
        for i in range(2, 9):
            await step(f"extended INSERT {i}", c.execute(f"INSERT INTO {keyed} (id, val) VALUES ($1, $2)", i, f"v{i}"))
        await step("copy_records_to_table", c.copy_records_to_table(keyed, records=[(i, f"v{i}") for i in range(9, 17)]))
        await c.execute(f"CREATE TABLE {plain} ({PLAIN})")
        await step("INSERT into the table without id", c.execute(f"INSERT INTO {plain} (k, v) VALUES ($1, $2)", "a", "1"))
        await c.execute(f"ALTER TABLE {keyed} ADD COLUMN note text")
        await step("INSERT of the new column", c.execute(f"INSERT INTO {keyed} (id, val, note) VALUES ($1, $2, $3)", 17, "v17", "n"))
    want = [(i, f"v{i}", None) for i in range(1, 17)] + [(17, "v17", "n")]
    await sharded(keyed, "id, val, note", want)
    await copies(plain, "k, v", [("a", "1")])


async def columns_add_key_refused(ctx):
    # A table without id is omnisharded (every shard holds all its rows):
    # given id it would be sharded by it with every row still everywhere.
    c = await connect(ctx)
    plain = ctx.table("_p")
    await c.execute(f"CREATE TABLE {plain} ({PLAIN})")
    await c.execute(f"INSERT INTO {plain} VALUES ('a', '1')")
    e = await expect_error(c.execute(f"ALTER TABLE {plain} ADD COLUMN id bigint"), "0A000", "adding the key column")
    expect("omnisharded" in str(e) and plain in str(e), f"the refusal does not say why: {describe(e)}")
    await step("INSERT after the refusal", c.execute(f"INSERT INTO {plain} (k, v) VALUES ($1, $2)", "b", "2"))
    await copies(plain, "k, v", [("a", "1"), ("b", "2")])


async def main_columns():
    await R.acheck("columns_create_insert", columns_create_insert)
    await R.acheck("columns_create_copy", columns_create_copy)
    await R.acheck("columns_add_column", columns_add_column)
    await R.acheck("columns_in_transaction", columns_in_transaction)
    await R.acheck("columns_add_key_refused", columns_add_key_refused)
    R.finish()


async def main():
    if ENV.columns:
        return await main_columns()
    await R.acheck("ddl_cached_select", ddl_cached_select)
    await R.acheck("ddl_uncached", ddl_uncached)
    await R.acheck("params_32767", params_32767)
    await R.acheck("executemany_keys", executemany_keys)
    await R.acheck("executemany_error_atomic", executemany_error_atomic)
    await R.acheck("prepared_reuse", prepared_reuse)
    await R.acheck("cursor_keyless", cursor_keyless)
    await R.acheck("cursor_fetch_forward", cursor_fetch_forward)
    await R.acheck("cursor_keyed", cursor_keyed)
    await R.acheck("cursor_table", cursor_table)
    if not ENV.sharded:
        await R.acheck("copy_roundtrip", copy_roundtrip)
    await R.acheck("copy_keyed_query", copy_keyed_query)
    await R.acheck("copy_records_drv_items", copy_records_drv_items)
    await R.acheck("txn_error_aborts", txn_error_aborts)
    await R.acheck("txn_error_aborts_keyed", txn_error_aborts_keyed)
    await R.acheck("txn_nested", txn_nested)
    await R.acheck("txn_rollback_block", txn_rollback_block)
    if ENV.mode != "columns":
        await R.acheck("listen_notify", listen_notify)
    await R.acheck("cancel_timeout", cancel_timeout)
    await R.acheck("cancel_in_transaction", cancel_in_transaction)
    if ENV.mode != "session":
        await R.acheck("pool_concurrency", pool_concurrency)
    await R.acheck("concurrent_connections", concurrent_connections)
    await R.acheck("startup_settings", startup_settings)
    await R.acheck("exec_error_repeated", exec_error_repeated)
    await R.acheck("exec_error_repeated_uncached", exec_error_repeated_uncached)
    await R.acheck("describe_error_repeated", describe_error_repeated)
    await R.acheck("fanout_runtime_error", fanout_runtime_error)
    await R.acheck("keyed_binary", keyed_binary)
    await R.acheck("types_roundtrip", types_roundtrip)
    await R.acheck("admin_show_pools", admin_show_pools)
    R.finish()


if __name__ == "__main__":
    asyncio.run(main())
