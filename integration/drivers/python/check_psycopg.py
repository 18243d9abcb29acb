"""psycopg 3 (binary wheel, its bundled libpq) against pgshard.

Checks what psycopg really sends: unnamed statements (prepare=False), named
ones (prepare=True and the automatic prepare after prepare_threshold) around
DDL that changes result and parameter types; 32768/65535 parameters and a
refused 65536; libpq pipeline mode (batches, an error in the middle, a
prepare+describe+execute of DDL through the raw libpq calls, executemany);
server-side cursors (DECLARE/FETCH) with itersize; COPY FROM STDIN / TO
STDOUT; transactions with errors, savepoints and nested conn.transaction();
LISTEN/NOTIFY (also in transaction mode and on two shards); cancel of pg_sleep; 32 concurrent connections
over the 4-connection pool; SET and ParameterStatus following each client;
statements whose execution or describe fails, repeated; a fanned-out
statement failing at run time then working; keyed round trips with text and
binary parameters; the admin console's SHOW POOLS.

Mode columns (two shards, only a column-only entry on `id`, no table): the
application's own tables, created and written at once (issue 39) by the
connection that created them and by another one opened before: INSERT with
the simple protocol (no parameters, and ClientCursor's client-side binding)
and the extended one, COPY in text and binary, inside a transaction too;
ALTER TABLE ADD COLUMN followed at once by writes of the new column; adding
the key column to a table without it refused. Where the rows landed is read
from each shard directly.

Every expectation is what psycopg gets from Postgres directly (the checks
pass when PGSHARD_PORT points at a shard, PGSHARD_DATABASE=shard_0 and
PGSHARD_MODE=session). In sharded mode the checks use drv_items with keys
(a statement inside a transaction stays on its shard) and scratch tables only
for DDL and keyless reads.
"""

import select
import threading
import time

import psycopg
from psycopg import pq

from common import CheckFailed, Runner, describe, expect, expect_eq, expect_copies, expect_sharded

R = Runner("psycopg")
ENV = R.env


def connect(ctx, autocommit=True, **kw):
    c = psycopg.connect(ctx.env.conninfo(), autocommit=autocommit, **kw)
    ctx.conns.append(c)
    return c


def expect_error(fn, sqlstate, what):
    """fn() must raise a psycopg error with this SQLSTATE."""
    try:
        got = fn()
    except psycopg.Error as e:
        if e.sqlstate != sqlstate:
            raise CheckFailed(f"{what}: want SQLSTATE {sqlstate}, got {describe(e)}")
        return e
    raise CheckFailed(f"{what}: want SQLSTATE {sqlstate}, got success ({got!r})")


def step(what, fn):
    """fn() must succeed; its error is reported with `what`."""
    try:
        return fn()
    except psycopg.Error as e:
        raise CheckFailed(f"{what}: {describe(e)}") from e


def pin(t):
    """In sharded mode a keyless INSERT into a scratch table must name a
    shard; the hint is a comment that Postgres ignores."""
    return f"/* pgdog_shard: 0 */ {t}" if ENV.sharded else t


# 1. Statements around DDL ---------------------------------------------------

def ddl_unnamed_select(ctx):
    c = connect(ctx)
    t = ctx.table()
    q = f"select x from {t} where %s::int = 1"
    c.execute(f"create table {t}(x int)")
    step("select on int table", lambda: c.execute(q, [1], prepare=False).fetchall())
    c.execute(f"drop table {t}")
    c.execute(f"create table {t}(x text)")
    rows = step("same select after the column became text", lambda: c.execute(q, [1], prepare=False).fetchall())
    expect_eq(rows, [], "rows")


def ddl_unnamed_insert(ctx):
    c = connect(ctx)
    t = ctx.table()
    q = pin(f"insert into {t} values (%s) returning *")
    c.execute(f"create table {t}(x int)")
    expect_eq(step("insert into int table", lambda: c.execute(q, ["1"], prepare=False).fetchall()), [(1,)], "int insert")
    c.execute(f"drop table {t}")
    c.execute(f"create table {t}(x text)")
    rows = step("insert into the table made text", lambda: c.execute(q, ["abc"], prepare=False).fetchall())
    expect_eq(rows, [("abc",)], "text insert")


def ddl_named_prepare(ctx):
    # psycopg deallocates its prepared statements after DDL; the named
    # statement is prepared again and works (as it does on Postgres).
    c = connect(ctx)
    t = ctx.table()
    q = f"select x from {t} where %s::int = 1"  # run with 0: no rows
    qi = pin(f"insert into {t} values (%s) returning *")
    c.execute(f"create table {t}(x int)")
    step("prepared select", lambda: c.execute(q, [0], prepare=True).fetchall())
    expect_eq(step("prepared insert", lambda: c.execute(qi, ["7"], prepare=True).fetchall()), [(7,)], "insert")
    c.execute(f"drop table {t}")
    c.execute(f"create table {t}(x text)")
    for i in range(3):
        expect_eq(step(f"prepared select after DDL #{i + 1}", lambda: c.execute(q, [0], prepare=True).fetchall()), [], "rows")
        expect_eq(
            step(f"prepared insert after DDL #{i + 1}", lambda: c.execute(qi, ["abc"], prepare=True).fetchall()),
            [("abc",)],
            "insert",
        )


def ddl_auto_prepare(ctx):
    # prepare_threshold (default 5): the 6th execution is a named statement.
    c = connect(ctx)
    t = ctx.table()
    q = f"select x from {t} where %s::int = 2"
    c.execute(f"create table {t}(x int)")
    for i in range(8):
        step(f"select #{i + 1}", lambda: c.execute(q, [1]).fetchall())
    c.execute(f"drop table {t}")
    c.execute(f"create table {t}(x text)")
    for i in range(8):
        expect_eq(step(f"select after DDL #{i + 1}", lambda: c.execute(q, [1]).fetchall()), [], "rows")


# 2. Parameter counts --------------------------------------------------------

def many_params(n):
    def run(ctx):
        c = connect(ctx)
        q = "SELECT cardinality(ARRAY[" + ",".join(["%s::int"] * n) + "])"
        got = step(f"{n} parameters", lambda: c.execute(q, list(range(n)), prepare=False).fetchone())
        expect_eq(got, (n,), "cardinality")
        expect_eq(step("select after", lambda: c.execute("select %s::int", [5]).fetchone()), (5,), "after")
    return run


def params_65536_refused(ctx):
    c = connect(ctx)
    n = 65536
    q = "SELECT cardinality(ARRAY[" + ",".join(["%s::int"] * n) + "])"
    try:
        c.execute(q, list(range(n)), prepare=False)
        raise CheckFailed("65536 parameters did not fail")
    except psycopg.Error:
        pass
    c2 = c if not c.closed else connect(ctx)
    expect_eq(step("select after", lambda: c2.execute("select %s::int", [5]).fetchone()), (5,), "after")


# 3. Pipeline mode -----------------------------------------------------------

def pipeline_basic(ctx):
    c = connect(ctx)
    k = ctx.keys(3)
    with c.pipeline():
        for i, key in enumerate(k):
            c.execute("insert into drv_items (id, val) values (%s, %s)", (key, f"p{i}"))
        curs = [c.execute("select val from drv_items where id = %s", (key,)) for key in k]
        one = c.execute("select %s::int + 1", [41])
    expect_eq([cu.fetchone() for cu in curs], [("p0",), ("p1",), ("p2",)], "read back")
    expect_eq(one.fetchone(), (42,), "select")


def pipeline_error_recovers(ctx):
    # Up to a Sync everything is one implicit transaction: the error rolls
    # back the insert before it and aborts the one after it.
    c = connect(ctx)
    k = ctx.keys(4)
    ins = "insert into drv_items (id, val) values (%s, 'x')"
    with c.pipeline() as p:
        c.execute(ins, (k[0],))
        c.execute("select 1/0")
        after = c.execute(ins, (k[1],))
        expect_error(p.sync, "22012", "sync after 1/0")
        try:
            after.fetchone()
            raise CheckFailed("statement after the error was not aborted")
        except psycopg.errors.PipelineAborted:
            pass
        except psycopg.Error:
            pass  # no result: aborted
        c.execute(ins, (k[2],))
        c.execute(ins, (k[3],))
    got = [c.execute("select count(*) from drv_items where id = %s", (key,)).fetchone()[0] for key in k]
    expect_eq(got, [0, 0, 1, 1], "rows present for keys (before error, after error, after recovery x2)")


def raw_pipeline(conninfo, stmts, deadline):
    """libpq pipeline mode by hand: (name, sql) prepared, described and
    executed, one Sync; returns the result statuses up to PIPELINE_SYNC."""
    pg = pq.PGconn.connect(conninfo.encode())
    if pg.status != pq.ConnStatus.OK:
        raise CheckFailed(f"connect: {pg.get_error_message()}")
    try:
        pg.enter_pipeline_mode()
        pg.nonblocking = 1
        for name, sql in stmts:
            pg.send_prepare(name, sql)
            pg.send_describe_prepared(name)
            pg.send_query_prepared(name, None)
        pg.pipeline_sync()
        while pg.flush() != 0:
            select.select([pg.socket], [pg.socket], [], 1)
        statuses = []
        while True:
            while pg.is_busy():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CheckFailed(f"no reply (hang) after results {statuses}")
                select.select([pg.socket], [], [], min(left, 0.5))
                pg.consume_input()
            r = pg.get_result()
            if r is None:
                continue
            st = pq.ExecStatus(r.status).name
            if r.status == pq.ExecStatus.FATAL_ERROR:
                st += f"({r.error_field(pq.DiagnosticField.SQLSTATE).decode()})"
            statuses.append(st)
            if r.status == pq.ExecStatus.PIPELINE_SYNC:
                return statuses
    finally:
        pg.finish()


def pipeline_prepare_ddl_libpq(ctx):
    # Known sharded hang: Parse/Describe/Bind/Execute of DDL that goes to
    # every shard, one Sync. Results: prepare, describe, execute, sync.
    t = ctx.table()
    stmt = f"CREATE TABLE IF NOT EXISTS {t} (a int)".encode()
    got = raw_pipeline(ctx.env.conninfo(), [(b"s1", stmt)], time.monotonic() + 10)
    expect_eq(got, ["COMMAND_OK", "COMMAND_OK", "COMMAND_OK", "PIPELINE_SYNC"], "pipeline results")


def pipeline_prepare_ddl_then_select_libpq(ctx):
    # The same followed by a second statement before the Sync.
    t = ctx.table()
    stmt = f"CREATE TABLE IF NOT EXISTS {t} (a int)".encode()
    got = raw_pipeline(ctx.env.conninfo(), [(b"s1", stmt), (b"s2", b"SELECT 1")], time.monotonic() + 10)
    want = ["COMMAND_OK"] * 5 + ["TUPLES_OK", "PIPELINE_SYNC"]
    expect_eq(got, want, "pipeline results")


def pipeline_prepare_ddl_psycopg(ctx):
    c = connect(ctx)
    t = ctx.table()
    with c.pipeline():
        c.execute(f"CREATE TABLE IF NOT EXISTS {t} (a int)", prepare=True)
        cur = c.execute(f"SELECT count(*) FROM {t} WHERE a = %s", [1], prepare=True)
    expect(cur.fetchone() is not None, "no row")


def pipeline_executemany(ctx):
    # executemany runs in a pipeline; keys on both shards when sharded.
    c = connect(ctx)
    k = ctx.keys(10, 0) + ctx.keys(10, 1 if ENV.shards > 1 else 0)
    with c.cursor() as cur:
        cur.executemany("insert into drv_items (id, val) values (%s, %s)", [(key, f"v{key}") for key in k])
    for key in k:
        expect_eq(c.execute("select val from drv_items where id = %s", (key,)).fetchone(), (f"v{key}",), f"id {key}")


# 4. Server-side cursors -----------------------------------------------------

def server_cursor_keyless(ctx):
    c = connect(ctx, autocommit=False)
    with c.transaction():
        with c.cursor(name="drv_psycopg_cur") as cur:
            cur.itersize = 7
            cur.execute("SELECT g FROM generate_series(1, 100) g")
            got = [r[0] for r in cur]
    expect_eq(got, list(range(1, 101)), "rows")


def server_cursor_keyed(ctx):
    c = connect(ctx, autocommit=False)
    (key,) = ctx.keys(1)
    with c.transaction():
        c.execute("insert into drv_items (id, val) values (%s, 'cur')", (key,))
        with c.cursor(name="drv_psycopg_kcur") as cur:
            cur.itersize = 1
            cur.execute("SELECT id, val FROM drv_items WHERE id = %s", (key,))
            first = cur.fetchmany(1)
            rest = cur.fetchall()
    expect_eq(first + rest, [(key, "cur")], "rows")


def server_cursor_table(ctx):
    # A named cursor over the whole (sharded) table, in order: the same rows
    # as the plain SELECT, whatever the itersize; then WITH HOLD (psycopg's
    # withhold, declared in a transaction and read after its COMMIT).
    c = connect(ctx, autocommit=False)
    (key,) = ctx.keys(1)
    with c.transaction():
        c.execute("insert into drv_items (id, val) values (%s, 'tab')", (key,))
    q = "SELECT id, val FROM drv_items ORDER BY val DESC, id"
    with c.transaction():
        want = c.execute(q).fetchall()
    expect(len(want) > 0, "drv_items has rows")
    for itersize in (1, 3, 1000):
        with c.transaction():
            with c.cursor(name="drv_psycopg_tcur") as cur:
                cur.itersize = itersize
                cur.execute(q)
                got = list(cur)
        expect_eq(got, want, f"rows with itersize {itersize}")
    with c.cursor(name="drv_psycopg_hcur", withhold=True) as cur:
        cur.itersize = 2
        cur.execute(q)
        c.commit()
        first = cur.fetchmany(3)
        c.execute("SELECT 1").fetchall()
        c.commit()
        rest = cur.fetchall()
    c.commit()
    expect_eq(first + rest, want, "rows of the WITH HOLD cursor")


# 5. COPY --------------------------------------------------------------------

def copy_roundtrip(ctx):
    c = connect(ctx)
    t = ctx.table()
    c.execute(f"create table {t} (id int, val text)")
    rows = [(i, f"row {i}\twith tab") for i in range(1000)]
    with c.cursor() as cur:
        with cur.copy(f"COPY {t} (id, val) FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
        expect_eq(cur.rowcount, 1000, "COPY FROM rowcount")
        out = []
        with cur.copy(f"COPY (SELECT id, val FROM {t} ORDER BY id) TO STDOUT") as cp:
            cp.set_types(["int4", "text"])
            out = list(cp.rows())
    expect_eq(out, rows, "COPY TO rows")
    expect_eq(c.execute("select %s::int", [3]).fetchone(), (3,), "after COPY")


def copy_keyed_to_stdout(ctx):
    c = connect(ctx)
    (key,) = ctx.keys(1)
    c.execute("insert into drv_items (id, val) values (%s, 'copy me')", (key,))
    with c.cursor() as cur:
        with cur.copy(f"COPY (SELECT id, val FROM drv_items WHERE id = {key}) TO STDOUT") as cp:
            data = b"".join(bytes(b) for b in cp)
    expect_eq(data, f"{key}\tcopy me\n".encode(), "COPY TO data")


def copy_into_drv_items(ctx):
    # Works, or (sharded, for now) is refused with an error; either way the
    # connection keeps working and no row lands on the wrong shard.
    c = connect(ctx)
    k = ctx.keys(3, 0) + ctx.keys(3, 1 if ENV.shards > 1 else 0)
    refused = None
    try:
        with c.cursor() as cur:
            with cur.copy("COPY drv_items (id, val) FROM STDIN") as cp:
                for key in k:
                    cp.write_row((key, f"c{key}"))
    except psycopg.Error as e:
        refused = e
    if refused is not None and not ENV.sharded:
        raise CheckFailed(f"COPY FROM refused: {describe(refused)}")
    expect_eq(step("select after COPY", lambda: c.execute("select %s::int", [1]).fetchone()), (1,), "after COPY")
    got = [c.execute("select val from drv_items where id = %s", (key,)).fetchone() for key in k]
    want = [None] * len(k) if refused is not None else [(f"c{key}",) for key in k]
    expect_eq(got, want, "rows after COPY" + (" (refused)" if refused is not None else ""))


# 6. Transactions ------------------------------------------------------------

def txn_error_aborts_simple(ctx):
    # No parameters: psycopg sends these as simple queries.
    c = connect(ctx)
    c.execute("BEGIN")
    expect_error(lambda: c.execute("SELECT 1/0"), "22012", "1/0")
    expect_error(lambda: c.execute("SELECT 1").fetchone(), "25P02", "SELECT 1 after the error")
    c.execute("ROLLBACK")
    expect_eq(c.execute("SELECT 1").fetchone(), (1,), "after ROLLBACK")


def txn_error_aborts_extended(ctx):
    c = connect(ctx)
    (key,) = ctx.keys(1)
    c.execute("BEGIN")
    c.execute("select val from drv_items where id = %s", (key,))
    expect_error(lambda: c.execute("SELECT 1/%s::int", [0]), "22012", "1/0")
    expect_error(lambda: c.execute("select val from drv_items where id = %s", (key,)).fetchone(), "25P02", "keyed select after the error")
    c.execute("ROLLBACK")
    expect_eq(c.execute("SELECT %s::int", [1]).fetchone(), (1,), "after ROLLBACK")


def txn_savepoints(ctx):
    c = connect(ctx)
    k = ctx.keys(3)
    ins = "insert into drv_items (id, val) values (%s, %s)"
    c.execute("BEGIN")
    c.execute(ins, (k[0], "a"))
    c.execute("SAVEPOINT s1")
    c.execute(ins, (k[1], "b"))
    expect_error(lambda: c.execute(ins, (k[0], "dup")), "23505", "duplicate key")
    expect_error(lambda: c.execute("select 1 from drv_items where id = %s", (k[0],)), "25P02", "after the error")
    c.execute("ROLLBACK TO SAVEPOINT s1")
    c.execute(ins, (k[2], "c"))
    c.execute("RELEASE SAVEPOINT s1")
    c.execute("COMMIT")
    got = [c.execute("select val from drv_items where id = %s", (key,)).fetchone() for key in k]
    expect_eq(got, [("a",), None, ("c",)], "rows after commit")


def txn_nested_blocks(ctx):
    c = connect(ctx, autocommit=False)
    k = ctx.keys(4)
    ins = "insert into drv_items (id, val) values (%s, %s)"
    with c.transaction():
        c.execute(ins, (k[0], "outer"))
        try:
            with c.transaction():
                c.execute(ins, (k[1], "inner"))
                c.execute(ins, (k[0], "dup"))
        except psycopg.errors.UniqueViolation:
            pass
        with c.transaction():
            c.execute(ins, (k[2], "inner2"))
        c.execute(ins, (k[3], "outer2"))
    expect_eq(c.info.transaction_status, pq.TransactionStatus.IDLE, "status after the block")
    got = [c.execute("select val from drv_items where id = %s", (key,)).fetchone() for key in k]
    c.commit()
    expect_eq(got, [("outer",), None, ("inner2",), ("outer2",)], "rows")


def txn_implicit_commit(ctx):
    # psycopg's default: not autocommit, BEGIN before the first statement.
    c = connect(ctx, autocommit=False)
    k = ctx.keys(2)
    c.execute("insert into drv_items (id, val) values (%s, 'kept')", (k[0],))
    c.commit()
    c.execute("insert into drv_items (id, val) values (%s, 'dropped')", (k[1],))
    c.rollback()
    got = [c.execute("select val from drv_items where id = %s", (key,)).fetchone() for key in k]
    c.commit()
    expect_eq(got, [("kept",), None], "rows")


# 7. LISTEN/NOTIFY (in transaction mode through pgshard's relay) -------------

def listen_notify(ctx):
    a = connect(ctx)
    b = connect(ctx)
    a.execute("LISTEN drv_psycopg_chan")
    b.execute("NOTIFY drv_psycopg_chan, 'hello'")
    got = [(n.channel, n.payload) for n in a.notifies(timeout=5, stop_after=1)]
    expect_eq(got, [("drv_psycopg_chan", "hello")], "notifications")
    b.execute("SELECT pg_notify('drv_psycopg_chan', %s)", ["again"])
    got = [(n.channel, n.payload) for n in a.notifies(timeout=5, stop_after=1)]
    expect_eq(got, [("drv_psycopg_chan", "again")], "notifications")
    # A NOTIFY rolled back is never sent; one committed is, at its commit.
    try:
        with b.transaction():
            b.execute("NOTIFY drv_psycopg_chan, 'rolled back'")
            raise psycopg.Rollback()
    except psycopg.Rollback:
        pass
    with b.transaction():
        b.execute("NOTIFY drv_psycopg_chan, 'committed'")
    got = [(n.channel, n.payload) for n in a.notifies(timeout=5, stop_after=1)]
    expect_eq(got, [("drv_psycopg_chan", "committed")], "notifications after commit")
    # After UNLISTEN nothing comes.
    a.execute("UNLISTEN drv_psycopg_chan")
    b.execute("NOTIFY drv_psycopg_chan, 'unheard'")
    got = [(n.channel, n.payload) for n in a.notifies(timeout=0.5)]
    expect_eq(got, [], "notifications after UNLISTEN")


# 8. Cancel ------------------------------------------------------------------

def cancel_sleep(ctx):
    c = connect(ctx)
    expect_eq(c.execute("select 1").fetchone(), (1,), "warm-up")
    timer = threading.Timer(0.5, c.cancel_safe)
    timer.start()
    t0 = time.monotonic()
    try:
        expect_error(lambda: c.execute("SELECT pg_sleep(10)"), "57014", "cancelled pg_sleep")
    finally:
        timer.cancel()
    took = time.monotonic() - t0
    expect(took < 5, f"cancel took {took:.1f} s")
    expect_eq(step("select after cancel", lambda: c.execute("select %s::int", [2]).fetchone()), (2,), "after cancel")


# 9. Concurrency -------------------------------------------------------------

def concurrent_clients(ctx):
    n, per = 32, 4
    k = ctx.keys(n * per // 2, 0) + ctx.keys(n * per // 2, 1 if ENV.shards > 1 else 0)
    errors = []

    def client(i):
        try:
            c = psycopg.connect(ctx.env.conninfo(), autocommit=False)
            with c:
                for j in range(per):
                    key = k[i * per + j]
                    with c.transaction():
                        c.execute("insert into drv_items (id, val) values (%s, %s)", (key, f"t{i}"))
                        got = c.execute("select val from drv_items where id = %s", (key,)).fetchone()
                        if got != (f"t{i}",):
                            errors.append(f"client {i}: read {got!r}")
        except Exception as e:
            errors.append(f"client {i}: {describe(e)}")

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(18)
    expect(not any(t.is_alive() for t in threads), "some clients hung")
    expect(not errors, f"{len(errors)} clients failed, e.g. {errors[0] if errors else ''}")


def session_settings(ctx):
    # SET follows each client over the shared server connections; the
    # ParameterStatus messages reach the driver (conn.info).
    n, rounds = 8, 5
    errors = []

    def client(i):
        try:
            c = psycopg.connect(ctx.env.conninfo(), autocommit=True)
            with c:
                tz = ["UTC", "Asia/Tokyo", "America/New_York", "Europe/Paris"][i % 4]
                c.execute(f"SET application_name = 'drv_psycopg_{i}'")
                c.execute(f"SET TIME ZONE '{tz}'")
                if c.info.parameter_status("application_name") != f"drv_psycopg_{i}":
                    errors.append(f"client {i}: ParameterStatus application_name {c.info.parameter_status('application_name')!r}")
                if str(c.info.timezone) != tz:
                    errors.append(f"client {i}: conn.info.timezone {c.info.timezone} want {tz}")
                for _ in range(rounds):
                    got = c.execute("SELECT current_setting('application_name'), current_setting('TimeZone'), %s::int",
                                    [i]).fetchone()
                    if got != (f"drv_psycopg_{i}", tz, i):
                        errors.append(f"client {i}: read {got!r}")
                    time.sleep(0.01)
        except Exception as e:
            errors.append(f"client {i}: {describe(e)}")

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(18)
    expect(not any(t.is_alive() for t in threads), "some clients hung")
    expect(not errors, f"{len(errors)} errors, e.g. {errors[0] if errors else ''}")


# 10. Failing statements, repeated -------------------------------------------

def exec_error_repeated(ctx):
    c = connect(ctx)
    for prepare in (True, False, None):
        for i in range(3):
            expect_error(lambda: c.execute("select 1/%s::int", [0], prepare=prepare), "22012", f"1/0 prepare={prepare} #{i + 1}")
    expect_eq(c.execute("select %s::int", [1], prepare=True).fetchone(), (1,), "good query")


def describe_error_repeated(ctx):
    c = connect(ctx)
    for prepare in (True, False):
        for i in range(3):
            expect_error(
                lambda: c.execute("select * from drv_psycopg_no_such_table where 1 = %s", [1], prepare=prepare),
                "42P01",
                f"missing table prepare={prepare} #{i + 1}",
            )
    expect_eq(c.execute("select %s::int", [1], prepare=True).fetchone(), (1,), "good query")


# 11. Fan-out failures, keyed round trips, types ------------------------------

def fanout_runtime_error(ctx):
    c = connect(ctx)
    q = "SELECT id FROM drv_items WHERE val = (1 / %s::int)::text"
    for prepare in (False, True):
        for i in range(2):
            expect_error(lambda: c.execute(q, [0], prepare=prepare), "22012", f"with 0, prepare={prepare} #{i + 1}")
            step(f"with 2, prepare={prepare} #{i + 1}", lambda: c.execute(q, [2], prepare=prepare).fetchall())


def keyed_text_binary(ctx):
    c = connect(ctx)
    k = ctx.keys(2, 0) + ctx.keys(2, 1 if ENV.shards > 1 else 0)
    for i, key in enumerate(k):
        if i % 2:
            c.execute("insert into drv_items (id, val) values (%b, %b)", (key, f"b{key}"))
        else:
            c.execute("insert into drv_items (id, val) values (%t, %t)", (key, f"t{key}"))
    for i, key in enumerate(k):
        want = (key, f"b{key}" if i % 2 else f"t{key}")
        for ph, binary in (("%t", False), ("%b", True), ("%b", False)):
            got = c.execute(f"select id, val from drv_items where id = {ph}", (key,), binary=binary).fetchone()
            expect_eq(got, want, f"id {key} param {ph} binary={binary}")
        got = c.execute("select id, val from drv_items where id = %s", (key,), prepare=True).fetchone()
        expect_eq(got, want, f"id {key} prepared")


def types_roundtrip(ctx):
    import datetime
    import decimal
    import uuid

    from psycopg.types.json import Jsonb

    c = connect(ctx)
    vals = [
        decimal.Decimal("12345678901234567890.0123456789"),
        datetime.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=datetime.timezone.utc),
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        b"\x00\x01\xffbytes",
        [1, 2, None, 4],
        "snow \u2603",
        3.5,
        True,
    ]
    q = "select %s::numeric, %s::timestamptz, %s::uuid, %s::bytea, %s::int[], %s::text, %s::float8, %s::bool, %s::jsonb"
    for binary in (False, True):
        got = c.execute(q, vals + [Jsonb({"a": [1, "x"]})], binary=binary).fetchone()
        expect_eq(list(got[:-1]), vals, f"values binary={binary}")
        expect_eq(got[-1], {"a": [1, "x"]}, f"jsonb binary={binary}")


# 12. Admin console ------------------------------------------------------------

def admin_show_pools(ctx):
    c = psycopg.connect(
        ctx.env.conninfo(user=ctx.env.admin_user, password=ctx.env.admin_password, dbname="admin"),
        autocommit=True,
    )
    ctx.conns.append(c)
    cur = c.execute("SHOW POOLS")
    cols = [d.name for d in cur.description]
    rows = [dict(zip(cols, r)) for r in cur.fetchall()]
    expect(rows, "SHOW POOLS returned no rows")
    for r in rows:
        for col, v in r.items():
            if col.startswith(("cl_", "sv_")):
                expect(int(v) < 1_000_000, f"SHOW POOLS {col} = {v} (row {r})")
    c.execute("SHOW CLIENTS").fetchall()


# 13. Tables the application creates (mode columns) ------------------------------

KEYED = "id bigint PRIMARY KEY, val text"
PLAIN = "k text PRIMARY KEY, v text"


def simple_insert(c, sql, params):
    """An INSERT in the simple protocol, its parameters bound by psycopg."""
    psycopg.ClientCursor(c).execute(sql, params)


def columns_create_insert(ctx):
    a, b = connect(ctx), connect(ctx)
    keyed, plain = ctx.table("_k"), ctx.table("_p")
    a.execute(f"CREATE TABLE {keyed} ({KEYED})")
    step("simple INSERT without a column list", lambda: b.execute(f"INSERT INTO {keyed} VALUES (1, 'v1')"))
    step("simple INSERT with parameters", lambda: simple_insert(b, f"INSERT INTO {keyed} (id, val) VALUES (%s, %s)", (2, "v2")))
    for i in range(3, 11):
        step(f"extended INSERT {i}", lambda: b.execute(f"INSERT INTO {keyed} (id, val) VALUES (%s, %s)", (i, f"v{i}")))
    for i in range(11, 17):
        step(f"prepared INSERT {i}", lambda: a.execute(f"INSERT INTO {keyed} VALUES (%s, %s)", (i, f"v{i}"), prepare=True))
    expect_sharded(ENV, keyed, "id, val", [(i, f"v{i}") for i in range(1, 17)])
    a.execute(f"CREATE TABLE {plain} ({PLAIN})")
    step("simple INSERT into the table without id", lambda: b.execute(f"INSERT INTO {plain} VALUES ('s', 'simple')"))
    step("extended INSERT into it", lambda: b.execute(f"INSERT INTO {plain} (k, v) VALUES (%s, %s)", ("e", "extended")))
    expect_copies(ENV, plain, "k, v", [("s", "simple"), ("e", "extended")])


def columns_create_copy(ctx):
    a = connect(ctx)
    keyed, plain = ctx.table("_k"), ctx.table("_p")
    a.execute(f"CREATE TABLE {keyed} ({KEYED})")
    with a.cursor() as cur:
        with step("COPY text", lambda: cur.copy(f"COPY {keyed} (id, val) FROM STDIN")) as cp:
            for i in range(1, 21):
                cp.write_row((i, f"v{i}"))
        expect_eq(cur.rowcount, 20, "COPY text rowcount")
        with step("COPY binary", lambda: cur.copy(f"COPY {keyed} FROM STDIN (FORMAT BINARY)")) as cp:
            cp.set_types(["int8", "text"])
            for i in range(21, 41):
                cp.write_row((i, f"v{i}"))
        expect_eq(cur.rowcount, 20, "COPY binary rowcount")
    expect_sharded(ENV, keyed, "id, val", [(i, f"v{i}") for i in range(1, 41)])
    a.execute(f"CREATE TABLE {plain} ({PLAIN})")
    with a.cursor() as cur:
        with cur.copy(f"COPY {plain} FROM STDIN") as cp:
            for i in range(3):
                cp.write_row((f"k{i}", f"v{i}"))
    expect_copies(ENV, plain, "k, v", [(f"k{i}", f"v{i}") for i in range(3)])


def columns_add_column(ctx):
    a, b = connect(ctx), connect(ctx)
    keyed, plain = ctx.table("_k"), ctx.table("_p")
    a.execute(f"CREATE TABLE {keyed} ({KEYED})")
    a.execute(f"CREATE TABLE {plain} ({PLAIN})")
    b.execute(f"INSERT INTO {keyed} (id, val) VALUES (%s, %s)", (1, "v1"))
    b.execute(f"INSERT INTO {plain} (k, v) VALUES (%s, %s)", ("a", "before"))
    a.execute(f"ALTER TABLE {keyed} ADD COLUMN note text")
    step("simple INSERT of the new column", lambda: b.execute(f"INSERT INTO {keyed} (id, val, note) VALUES (2, 'v2', 'n2')"))
    step("simple INSERT without a column list", lambda: b.execute(f"INSERT INTO {keyed} VALUES (3, 'v3', 'n3')"))
    for i in range(4, 9):
        step(f"extended INSERT {i}", lambda: b.execute(f"INSERT INTO {keyed} (id, val, note) VALUES (%s, %s, %s)", (i, f"v{i}", f"n{i}")))
    step("extended INSERT without a column list", lambda: a.execute(f"INSERT INTO {keyed} VALUES (%s, %s, %s)", (9, "v9", "n9")))
    with b.cursor() as cur:
        with step("COPY of the new column", lambda: cur.copy(f"COPY {keyed} (id, val, note) FROM STDIN")) as cp:
            for i in range(10, 17):
                cp.write_row((i, f"v{i}", f"n{i}"))
    want = [(1, "v1", None)] + [(i, f"v{i}", f"n{i}") for i in range(2, 17)]
    expect_sharded(ENV, keyed, "id, val, note", want)
    a.execute(f"ALTER TABLE {plain} ADD COLUMN note text")
    step("simple INSERT of the new column", lambda: b.execute(f"INSERT INTO {plain} VALUES ('s', 'simple', 'n')"))
    step("extended INSERT of it", lambda: b.execute(f"INSERT INTO {plain} (k, v, note) VALUES (%s, %s, %s)", ("e", "ext", "n")))
    expect_copies(ENV, plain, "k, v, note", [("a", "before", None), ("s", "simple", "n"), ("e", "ext", "n")])


def columns_in_transaction(ctx):
    # psycopg's default: BEGIN before the first statement, until commit().
    c = connect(ctx, autocommit=False)
    keyed, plain = ctx.table("_k"), ctx.table("_p")
    c.execute(f"CREATE TABLE {keyed} ({KEYED})")
    step("simple INSERT", lambda: c.execute(f"INSERT INTO {keyed} VALUES (1, 'v1')"))
    for i in range(2, 9):
        step(f"extended INSERT {i}", lambda: c.execute(f"INSERT INTO {keyed} (id, val) VALUES (%s, %s)", (i, f"v{i}")))
    with c.cursor() as cur:
        with step("COPY", lambda: cur.copy(f"COPY {keyed} (id, val) FROM STDIN")) as cp:
            for i in range(9, 17):
                cp.write_row((i, f"v{i}"))
    c.execute(f"CREATE TABLE {plain} ({PLAIN})")
    step("INSERT into the table without id", lambda: c.execute(f"INSERT INTO {plain} (k, v) VALUES (%s, %s)", ("a", "1")))
    c.execute(f"ALTER TABLE {keyed} ADD COLUMN note text")
    step("INSERT of the new column", lambda: c.execute(f"INSERT INTO {keyed} (id, val, note) VALUES (%s, %s, %s)", (17, "v17", "n")))
    c.commit()
    want = [(i, f"v{i}", None) for i in range(1, 17)] + [(17, "v17", "n")]
    expect_sharded(ENV, keyed, "id, val, note", want)
    expect_copies(ENV, plain, "k, v", [("a", "1")])


def columns_add_key_refused(ctx):
    # A table without id is omnisharded (every shard holds all its rows):
    # given id it would be sharded by it with every row still everywhere.
    c = connect(ctx)
    plain = ctx.table("_p")
    c.execute(f"CREATE TABLE {plain} ({PLAIN})")
    c.execute(f"INSERT INTO {plain} VALUES ('a', '1')")
    e = expect_error(lambda: c.execute(f"ALTER TABLE {plain} ADD COLUMN id bigint"), "0A000", "adding the key column")
    expect("omnisharded" in str(e) and plain in str(e), f"the refusal does not say why: {describe(e)}")
    step("INSERT after the refusal", lambda: c.execute(f"INSERT INTO {plain} (k, v) VALUES (%s, %s)", ("b", "2")))
    expect_copies(ENV, plain, "k, v", [("a", "1"), ("b", "2")])


def main_columns():
    R.check("columns_create_insert", columns_create_insert)
    R.check("columns_create_copy", columns_create_copy)
    R.check("columns_add_column", columns_add_column)
    R.check("columns_in_transaction", columns_in_transaction)
    R.check("columns_add_key_refused", columns_add_key_refused)
    R.finish()


def main():
    if ENV.columns:
        return main_columns()
    R.check("ddl_unnamed_select", ddl_unnamed_select)
    R.check("ddl_unnamed_insert", ddl_unnamed_insert)
    R.check("ddl_named_prepare", ddl_named_prepare)
    R.check("ddl_auto_prepare", ddl_auto_prepare)
    R.check("params_32768", many_params(32768))
    R.check("params_65535", many_params(65535))
    R.check("params_65536_refused", params_65536_refused)
    R.check("pipeline_basic", pipeline_basic)
    R.check("pipeline_error_recovers", pipeline_error_recovers)
    R.check("pipeline_prepare_ddl_libpq", pipeline_prepare_ddl_libpq, timeout=15)
    R.check("pipeline_prepare_ddl_then_select_libpq", pipeline_prepare_ddl_then_select_libpq, timeout=15)
    R.check("pipeline_prepare_ddl_psycopg", pipeline_prepare_ddl_psycopg, timeout=15)
    R.check("pipeline_executemany", pipeline_executemany)
    R.check("server_cursor_keyless", server_cursor_keyless)
    R.check("server_cursor_keyed", server_cursor_keyed)
    R.check("server_cursor_table", server_cursor_table)
    if not ENV.sharded:
        R.check("copy_roundtrip", copy_roundtrip)
    R.check("copy_keyed_to_stdout", copy_keyed_to_stdout)
    R.check("copy_into_drv_items", copy_into_drv_items)
    R.check("txn_error_aborts_simple", txn_error_aborts_simple)
    R.check("txn_error_aborts_extended", txn_error_aborts_extended)
    R.check("txn_savepoints", txn_savepoints)
    R.check("txn_nested_blocks", txn_nested_blocks)
    R.check("txn_implicit_commit", txn_implicit_commit)
    if ENV.mode != "columns":
        R.check("listen_notify", listen_notify)
    R.check("cancel_sleep", cancel_sleep)
    R.check("concurrent_clients", concurrent_clients)
    R.check("session_settings", session_settings)
    R.check("exec_error_repeated", exec_error_repeated)
    R.check("describe_error_repeated", describe_error_repeated)
    R.check("fanout_runtime_error", fanout_runtime_error)
    R.check("keyed_text_binary", keyed_text_binary)
    R.check("types_roundtrip", types_roundtrip)
    R.check("admin_show_pools", admin_show_pools)
    R.finish()


if __name__ == "__main__":
    main()
