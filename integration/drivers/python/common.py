"""Shared helpers of the Python driver checks: the target read from the
environment, ok/FAIL reporting, per-check timeouts and clean-up.

Each check is a function taking a Ctx. It passes by returning and fails by
raising; a hang past its timeout fails it too (sync checks run in a thread
whose sockets are shut down on timeout, async checks are cancelled). The
connections a check opened through its Ctx are closed afterwards, and the
clean-up statements it registered run on a fresh connection, pass or fail.

Keys of the shared sharded table `drv_items`: each driver owns a range of ids
(DRIVER_KEY_BASE) and each check a block of 1000 in it, so no two checks or
drivers touch the same rows; `Ctx.keys(n, shard)` picks ids that hash to the
given shard (asked of the shard itself, with satisfies_hash_partition).

Mode `columns` (two shards, only a column-only `[[sharded_tables]]` entry on
`id`, no table): the checks create their own tables and check where the rows
landed by reading each shard directly (`expect_sharded`, `expect_copies`).
"""

import asyncio
import os
import socket
import sys
import threading
import time
import traceback

DRIVER_KEY_BASE = {"psycopg": 7_100_000, "asyncpg": 7_200_000}
KEYS_PER_CHECK = 1000
MAX_CHECKS = 64
DEFAULT_TIMEOUT = 20.0


class CheckFailed(Exception):
    """A check's expectation did not hold."""


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def expect_eq(got, want, what):
    if got != want:
        raise CheckFailed(f"{what}: got {got!r}, want {want!r}")


def describe(exc):
    """One line for an exception: class, SQLSTATE when there is one, message."""
    state = getattr(exc, "sqlstate", None)
    msg = " ".join(str(exc).split())
    if len(msg) > 300:
        msg = msg[:300] + "..."
    return f"{type(exc).__name__}{f' [{state}]' if state else ''}: {msg}"


class Env:
    def __init__(self):
        e = os.environ

        def need(name):
            if name not in e:
                sys.exit(f"missing environment variable {name}")
            return e[name]

        self.host = need("PGSHARD_HOST")
        self.port = int(need("PGSHARD_PORT"))
        self.user = need("PGSHARD_USER")
        self.password = need("PGSHARD_PASSWORD")
        self.database = need("PGSHARD_DATABASE")
        self.admin_user = e.get("PGSHARD_ADMIN_USER", "admin")
        self.admin_password = e.get("PGSHARD_ADMIN_PASSWORD", "")
        self.mode = need("PGSHARD_MODE")
        if self.mode not in ("transaction", "session", "sharded", "columns"):
            sys.exit(f"PGSHARD_MODE must be transaction, session, sharded or columns, not {self.mode!r}")
        self.pool_size = int(e.get("PGSHARD_POOL_SIZE", "4"))
        self.shard_ports = [int(p) for p in e.get("PGSHARD_SHARD_PORTS", "").split(",") if p]
        self.shards = int(e.get("PGSHARD_SHARDS", str(max(1, len(self.shard_ports)))))

    @property
    def sharded(self):
        return self.mode == "sharded"

    @property
    def columns(self):
        """Two shards, no drv_items: tables are sharded by an `id` column."""
        return self.mode == "columns"

    def conninfo(self, **over):
        """libpq keyword/value string for pgshard (or, with port/dbname
        overrides, a shard directly)."""
        kv = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "dbname": self.database,
            "connect_timeout": 10,
        }
        kv.update(over)
        return " ".join(f"{k}='{v}'" for k, v in kv.items())


def shard_zero_keys(env, lo, hi):
    """The ids in [lo, hi) that hash to shard 0 of a two-shard cluster."""
    import psycopg

    with psycopg.connect(env.conninfo(port=env.shard_ports[0], dbname="shard_0"), autocommit=True) as c:
        row = c.execute(
            "SELECT array_agg(i) FROM generate_series(%s::bigint, %s::bigint) i "
            "WHERE satisfies_hash_partition('drv_items'::regclass, %s, 0, i)",
            (lo, hi - 1, env.shards),
        ).fetchone()
    return set(row[0] or [])


def shard_rows(env, sql):
    """Each shard's rows of `sql`, read from the shard's Postgres directly."""
    import psycopg

    out = []
    for i, port in enumerate(env.shard_ports):
        with psycopg.connect(env.conninfo(port=port, dbname=f"shard_{i}"), autocommit=True) as c:
            out.append([tuple(r) for r in c.execute(sql).fetchall()])
    return out


def expect_sharded(env, table, columns, want):
    """The rows `want` (tuples of `columns`, the first being `id`) are in
    `table` sharded by id: each on exactly one shard, every shard holding
    some, and pgshard reading each by its key from where it is."""
    import psycopg

    per_shard = shard_rows(env, f"SELECT {columns} FROM {table}")
    got = sorted(r for rows in per_shard for r in rows)
    expect_eq(got, sorted(want), f"{table}: the shards' rows together")
    counts = [len(rows) for rows in per_shard]
    expect(all(counts), f"{table}: a shard holds none of the {len(want)} rows: {counts}")
    with psycopg.connect(env.conninfo(), autocommit=True) as c:
        for row in want:
            got = c.execute(f"SELECT {columns} FROM {table} WHERE id = %s", (row[0],)).fetchall()
            expect_eq([tuple(r) for r in got], [row], f"{table}: id {row[0]} read by key through pgshard")


def expect_copies(env, table, columns, want):
    """Every shard holds all the rows `want` of `table` (omnisharded)."""
    for i, rows in enumerate(shard_rows(env, f"SELECT {columns} FROM {table}")):
        expect_eq(sorted(rows), sorted(want), f"{table}: rows on shard {i}")


class Ctx:
    """What one check gets: the environment, connection tracking, keys and
    clean-up registration."""

    def __init__(self, runner, index, name):
        self.runner = runner
        self.env = runner.env
        self.name = name
        self.index = index
        self.conns = []
        self.cleanup = []  # (sql, params) run after the check
        self._used = set()

    def keys(self, n, shard=0):
        """n ids of drv_items on `shard` (every id is on shard 0 of an
        unsharded cluster), unique to this check; registered for deletion
        before returning and again after the check."""
        base = self.runner.key_base + self.index * KEYS_PER_CHECK
        out = []
        for k in range(base, base + KEYS_PER_CHECK):
            if k in self._used:
                continue
            if self.runner.shard_of(k) == shard:
                out.append(k)
                self._used.add(k)
                if len(out) == n:
                    break
        expect(len(out) == n, f"not enough keys on shard {shard}")
        for k in out:
            self.cleanup.append(("DELETE FROM drv_items WHERE id = %s", (k,)))
        self.runner.delete_keys(out)
        return out

    def table(self, suffix=""):
        """This check's scratch table name (dropped before and after)."""
        t = f"drv_{self.runner.driver}_{self.name}{suffix}"
        self.cleanup.append((f"DROP TABLE IF EXISTS {t}", None))
        self.runner.run_sql([(f"DROP TABLE IF EXISTS {t}", None)])
        return t


class Runner:
    """Runs checks one after the other and prints the report."""

    def __init__(self, driver):
        self.driver = driver
        self.env = Env()
        self.key_base = DRIVER_KEY_BASE[driver]
        self.passed = 0
        self.failed = 0
        self.count = 0
        self._shard0 = None
        if self.env.shards > 1 and not self.env.columns:
            self._shard0 = shard_zero_keys(
                self.env, self.key_base, self.key_base + MAX_CHECKS * KEYS_PER_CHECK
            )

    def shard_of(self, key):
        if self._shard0 is None:
            return 0
        return 0 if key in self._shard0 else 1

    # Clean-up goes through pgshard with psycopg, keyed, in autocommit.
    def run_sql(self, stmts):
        if not stmts:
            return
        import psycopg

        with psycopg.connect(self.env.conninfo(), autocommit=True) as c:
            for sql, params in stmts:
                c.execute(sql, params, prepare=False)

    def delete_keys(self, keys):
        self.run_sql([("DELETE FROM drv_items WHERE id = %s", (k,)) for k in keys])

    def report(self, name, err):
        if err is None:
            self.passed += 1
            print(f"ok {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {err}", flush=True)

    def _after(self, ctx, err):
        try:
            self.run_sql(ctx.cleanup)
        except Exception as e:  # a clean-up failure is a failure too
            if err is None:
                err = f"clean-up failed: {describe(e)}"
        return err

    def check(self, name, fn, timeout=DEFAULT_TIMEOUT):
        """Runs a sync check in a thread with a timeout."""
        ctx = Ctx(self, self.count, name)
        self.count += 1
        result = {}

        def body():
            try:
                fn(ctx)
                result["err"] = None
            except CheckFailed as e:
                result["err"] = str(e)
            except Exception as e:
                result["err"] = describe(e)
                if os.environ.get("PGSHARD_DEBUG"):
                    traceback.print_exc()

        t0 = time.monotonic()
        th = threading.Thread(target=body, daemon=True, name=name)
        th.start()
        th.join(timeout)
        if th.is_alive():
            result["err"] = f"timed out after {timeout:.0f} s (hang)"
            # Unblock the thread: shut its sockets down so libpq sees EOF.
            for c in ctx.conns:
                shutdown_fd(getattr(c, "pgconn", None))
            th.join(2)
        err = result.get("err")
        for c in ctx.conns:
            try:
                if not c.closed:
                    c.close()
            except Exception:
                pass
        err = self._after(ctx, err)
        if os.environ.get("PGSHARD_DEBUG"):
            print(f"# {name}: {time.monotonic() - t0:.2f} s", flush=True)
        self.report(name, err)

    async def acheck(self, name, fn, timeout=DEFAULT_TIMEOUT):
        """Runs an async check with a timeout; its asyncpg connections are
        terminated afterwards."""
        ctx = Ctx(self, self.count, name)
        self.count += 1
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(fn(ctx), timeout)
            err = None
        except asyncio.TimeoutError:
            err = f"timed out after {timeout:.0f} s (hang)"
        except CheckFailed as e:
            err = str(e)
        except Exception as e:
            err = describe(e)
            if os.environ.get("PGSHARD_DEBUG"):
                traceback.print_exc()
        for c in ctx.conns:
            try:
                if hasattr(c, "terminate"):
                    if not c.is_closed():
                        c.terminate()
                else:  # an asyncpg pool
                    c.terminate()
            except Exception:
                pass
        err = await asyncio.to_thread(self._after, ctx, err)
        if os.environ.get("PGSHARD_DEBUG"):
            print(f"# {name}: {time.monotonic() - t0:.2f} s", flush=True)
        self.report(name, err)

    def finish(self):
        print(f"{self.driver} {self.env.mode}: {self.passed} passed, {self.failed} failed", flush=True)
        sys.stdout.flush()
        # Daemon threads of timed-out checks may still be blocked: do not wait.
        os._exit(0 if self.failed == 0 else 1)


def shutdown_fd(pgconn):
    """Shuts a libpq connection's socket down (both ways) from outside the
    thread using it, so a read blocked on it returns."""
    try:
        fd = pgconn.socket
        s = socket.socket(fileno=os.dup(fd))
        try:
            s.shutdown(socket.SHUT_RDWR)
        finally:
            s.close()
    except Exception:
        pass
