// Driver checks for pgjdbc (org.postgresql:postgresql) against pgshard.
//
// `java -cp ... DriverChecks pgjdbc` reads its target from PGSHARD_* (see
// integration/src/driver_cluster.rs), runs every check that applies to
// PGSHARD_MODE one after the other, each in its own thread with a deadline
// (on expiry its connections are aborted), and prints `ok NAME` or
// `FAIL NAME: REASON` per check, then `pgjdbc MODE: N passed, M failed`.
// Exit status 0 iff nothing failed.
//
// The checks exercise what pgjdbc does on the wire: unnamed statements, then
// server-prepared `S_n` after prepareThreshold (5) executions and its
// transparent re-prepare after "cached plan must not change result type",
// portals with setFetchSize inside transactions, executeBatch (one Sync for
// the batch) and reWriteBatchedInserts, CopyManager, savepoints,
// Statement.cancel / setQueryTimeout (CancelRequest), LISTEN/NOTIFY, many
// concurrent connections over a small server pool, and the admin console in
// the simple query mode. Every check expects what pgjdbc gets from Postgres
// directly; the sharded-mode adaptations (keyed statements on drv_items, no
// keyless INSERT into unsharded tables) are noted where they are made, and so
// are the few things pgshard deliberately does not support yet (statements for
// several shards inside a transaction in this protocol): there the check
// asserts the clean refusal (SQLSTATE 0A000, at once, the connection usable
// afterwards) besides the supported part. Mode columns (the application's own
// tables on a cluster sharded by a column-only entry) is in ColumnsChecks.java.

import java.io.ByteArrayOutputStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.copy.CopyManager;

public final class DriverChecks {

    /** The target, from the PGSHARD_* variables. */
    static final class Env {
        final String host = need("PGSHARD_HOST");
        final String port = need("PGSHARD_PORT");
        final String user = need("PGSHARD_USER");
        final String password = System.getenv().getOrDefault("PGSHARD_PASSWORD", "");
        final String database = need("PGSHARD_DATABASE");
        final String adminUser = System.getenv().getOrDefault("PGSHARD_ADMIN_USER", "");
        final String adminPassword = System.getenv().getOrDefault("PGSHARD_ADMIN_PASSWORD", "");
        final String mode = need("PGSHARD_MODE");
        final int poolSize = intOr("PGSHARD_POOL_SIZE", 4);
        /** The shards' own Postgres ports (shard i serves database shard_i), sharded mode only. */
        final List<String> shardPorts = List.of(System.getenv().getOrDefault("PGSHARD_SHARD_PORTS", "")
                .split(",")).stream().filter(s -> !s.isEmpty()).toList();
        final int shards = intOr("PGSHARD_SHARDS", Math.max(1, shardPorts.size()));

        private static String need(String name) {
            String v = System.getenv(name);
            if (v == null || v.isEmpty()) {
                throw new IllegalStateException(name + " is not set");
            }
            return v;
        }

        private static int intOr(String name, int def) {
            try {
                return Integer.parseInt(System.getenv(name));
            } catch (RuntimeException e) {
                return def;
            }
        }
    }

    /** A failed expectation; its message is the FAIL line's reason. */
    static final class CheckFailed extends Exception {
        private static final long serialVersionUID = 1L;

        CheckFailed(String msg) {
            super(msg);
        }
    }

    interface Body {
        void run(Ctx c) throws Exception;
    }

    record Check(String name, Set<String> modes, int timeoutSeconds, Body body) {
    }

    /** What a check gets: the target, its drv_items ids, its connections and cleanups. */
    static final class Ctx {
        final Env env;
        final long idBase;
        final List<Connection> conns = Collections.synchronizedList(new ArrayList<>());
        final List<String> cleanupSql = Collections.synchronizedList(new ArrayList<>());
        final List<Long> cleanupIds = Collections.synchronizedList(new ArrayList<>());

        Ctx(Env env, long idBase) {
            this.env = env;
            this.idBase = idBase;
        }

        boolean sharded() {
            return env.mode.equals("sharded");
        }

        long id(int n) {
            return idBase + n;
        }

        /**
         * This check's ids (idBase .. idBase+999) whose drv_items rows live on
         * `shard`, ascending, asked of shard 0's Postgres directly with
         * satisfies_hash_partition (its drv_items is the hash-partitioned parent).
         */
        List<Long> idsOnShard(int shard) throws SQLException, CheckFailed {
            expect(!env.shardPorts.isEmpty(), "PGSHARD_SHARD_PORTS is not set: cannot tell which shard an id is on");
            Properties p = props(env.user, env.password);
            String url = "jdbc:postgresql://" + env.host + ":" + env.shardPorts.get(0) + "/shard_0";
            List<Long> out = new ArrayList<>();
            try (Connection conn = DriverManager.getConnection(url, p);
                    PreparedStatement ps = conn.prepareStatement("SELECT i FROM generate_series(?::int8, ?::int8) i"
                            + " WHERE satisfies_hash_partition('drv_items'::regclass, ?, ?, i) ORDER BY i")) {
                ps.setLong(1, id(0));
                ps.setLong(2, id(999));
                ps.setInt(3, env.shards);
                ps.setInt(4, shard);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(rs.getLong(1));
                    }
                }
            }
            return out;
        }

        Properties props(String user, String password) {
            Properties p = new Properties();
            p.setProperty("user", user);
            p.setProperty("password", password);
            p.setProperty("sslmode", "disable");
            p.setProperty("connectTimeout", "5");
            p.setProperty("loginTimeout", "5");
            p.setProperty("socketTimeout", "30");
            p.setProperty("ApplicationName", "drv_jdbc");
            return p;
        }

        String url(String database) {
            return "jdbc:postgresql://" + env.host + ":" + env.port + "/" + database;
        }

        /** A connection closed when the check ends; extra are "key=value" driver properties. */
        Connection connect(String... extra) throws SQLException {
            Properties p = props(env.user, env.password);
            for (String kv : extra) {
                int eq = kv.indexOf('=');
                p.setProperty(kv.substring(0, eq), kv.substring(eq + 1));
            }
            Connection conn = DriverManager.getConnection(url(env.database), p);
            conns.add(conn);
            return conn;
        }

        /** Drops the table (IF EXISTS), creates it, and drops it again at the end. */
        void scratchTable(Connection conn, String name, String columns) throws SQLException {
            try (Statement st = conn.createStatement()) {
                st.execute("DROP TABLE IF EXISTS " + name);
                st.execute("CREATE TABLE " + name + " (" + columns + ")");
            }
            cleanupSql.add("DROP TABLE IF EXISTS " + name);
        }

        /** Deletes these drv_items rows now (keyed deletes) and again at the end. */
        void ownRows(Connection conn, long... ids) throws SQLException {
            try (PreparedStatement ps = conn.prepareStatement("DELETE FROM drv_items WHERE id = ?")) {
                for (long id : ids) {
                    ps.setLong(1, id);
                    ps.executeUpdate();
                    cleanupIds.add(id);
                }
            }
        }

        /** Aborts (if hung) or closes the connections, then cleans up on a fresh one. */
        void finish(boolean abort, ExecutorService pool) {
            synchronized (conns) {
                for (Connection conn : conns) {
                    try {
                        if (abort) {
                            conn.abort(pool);
                        } else {
                            conn.close();
                        }
                    } catch (SQLException | RuntimeException ignored) {
                        // already broken
                    }
                }
            }
            if (cleanupSql.isEmpty() && cleanupIds.isEmpty()) {
                return;
            }
            Properties p = props(env.user, env.password);
            p.setProperty("socketTimeout", "5");
            try (Connection conn = DriverManager.getConnection(url(env.database), p);
                    Statement st = conn.createStatement();
                    PreparedStatement del = conn.prepareStatement("DELETE FROM drv_items WHERE id = ?")) {
                for (String sql : cleanupSql) {
                    st.execute(sql);
                }
                for (long id : cleanupIds) {
                    del.setLong(1, id);
                    del.executeUpdate();
                }
            } catch (SQLException ignored) {
                // best effort: the next run drops and deletes first anyway
            }
        }
    }

    // ----- helpers -----

    static String describe(Throwable e) {
        if (e == null) {
            return "no error";
        }
        if (e instanceof SQLException se && se.getSQLState() != null) {
            return se.getSQLState() + " \"" + firstLine(se.getMessage()) + "\"";
        }
        return e.getClass().getSimpleName() + ": " + firstLine(String.valueOf(e.getMessage()));
    }

    static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    interface SqlAction {
        void run() throws SQLException;
    }

    /** Fails unless action throws an SQLException with SQLSTATE state. */
    static void expectState(String what, String state, SqlAction action) throws CheckFailed {
        try {
            action.run();
        } catch (SQLException e) {
            if (state.equals(e.getSQLState())) {
                return;
            }
            throw new CheckFailed(what + ": want SQLSTATE " + state + ", got " + describe(e));
        }
        throw new CheckFailed(what + ": want SQLSTATE " + state + ", got no error");
    }

    /**
     * What pgshard deliberately does not support yet: action must fail with
     * SQLSTATE 0A000 (for a batch, as the BatchUpdateException's next
     * exception) within 3 s, not hang or break the connection.
     */
    static void expectRefused(String what, SqlAction action) throws CheckFailed {
        long start = System.nanoTime();
        try {
            action.run();
        } catch (SQLException e) {
            SQLException cause = e instanceof BatchUpdateException && e.getNextException() != null
                    ? e.getNextException() : e;
            long ms = (System.nanoTime() - start) / 1_000_000;
            expect("0A000".equals(cause.getSQLState()),
                    what + ": want refusal with SQLSTATE 0A000, got " + describe(cause));
            expect(ms < 3000, what + ": refused only after " + ms + " ms");
            return;
        }
        throw new CheckFailed(what + ": want refusal with SQLSTATE 0A000, got no error");
    }

    /** The connection still answers a simple query correctly (after a refusal). */
    static void expectUsable(Connection conn, String what) throws CheckFailed {
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT 41 + 1")) {
            expect(rs.next() && rs.getInt(1) == 42, what + ": SELECT 41 + 1 is not 42");
        } catch (SQLException e) {
            throw new CheckFailed(what + ": SELECT 41 + 1: " + describe(e));
        }
    }

    static void expect(boolean ok, String msg) throws CheckFailed {
        if (!ok) {
            throw new CheckFailed(msg);
        }
    }

    static String queryString(Connection conn, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    static void exec(Connection conn, String sql) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.execute(sql);
        }
    }

    static void insertItem(Connection conn, long id, String val) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO drv_items (id, val) VALUES (?, ?)")) {
            ps.setLong(1, id);
            ps.setString(2, val);
            ps.executeUpdate();
        }
    }

    static String itemVal(Connection conn, long id) throws SQLException {
        return queryString(conn, "SELECT val FROM drv_items WHERE id = ?", id);
    }

    // ----- checks -----

    static List<Check> checks() {
        Set<String> all = Set.of("transaction", "session", "sharded");
        return List.of(
                new Check("basic", all, 10, DriverChecks::basic),
                new Check("keyed_roundtrip", all, 15, DriverChecks::keyedRoundtrip),
                new Check("prepared_across_ddl", all, 15, DriverChecks::preparedAcrossDdl),
                new Check("named_statements_across_connections", all, 15, DriverChecks::namedStatements),
                new Check("describe_errors", all, 10, DriverChecks::describeErrors),
                new Check("large_param_count", all, 20, DriverChecks::largeParamCount),
                new Check("batch_inserts", all, 10, DriverChecks::batchInserts),
                new Check("batch_rewrite_inserts", all, 10, DriverChecks::batchRewriteInserts),
                new Check("batch_error_mid_batch", all, 10, DriverChecks::batchError),
                new Check("cursor_fetch_size", all, 15, DriverChecks::cursorFetchSize),
                new Check("copy", all, 15, DriverChecks::copy),
                new Check("tx_error_aborts", all, 10, DriverChecks::txErrorAborts),
                new Check("savepoints", all, 10, DriverChecks::savepoints),
                new Check("listen_notify", Set.of("session"), 10, DriverChecks::listenNotify),
                new Check("cancel", all, 25, DriverChecks::cancel),
                new Check("concurrent_connections", all, 40, DriverChecks::concurrentConnections),
                new Check("fanout_error_recovery", all, 10, DriverChecks::fanoutErrorRecovery),
                new Check("admin_show_pools", all, 10, DriverChecks::adminShowPools));
    }

    /** basic: connect, a parametrised query, server version, a transaction. */
    static void basic(Ctx c) throws Exception {
        Connection conn = c.connect();
        expect("42".equals(queryString(conn, "SELECT ?::int8 + 1", 41L)), "SELECT ?::int8 + 1 is not 42");
        expect(conn.getMetaData().getDatabaseMajorVersion() >= 9, "no server version");
        conn.setAutoCommit(false);
        expect("1".equals(queryString(conn, "SELECT 1")), "SELECT 1 in a transaction");
        conn.commit();
    }

    /**
     * keyed_roundtrip: 20 drv_items rows written and read by key through one
     * PreparedStatement each (server-prepared after 5 uses; int8 sent binary)
     * and through plain Statements (literals, the simple protocol); on a
     * sharded cluster each must reach the shard owning the key.
     */
    static void keyedRoundtrip(Ctx c) throws Exception {
        Connection conn = c.connect();
        long[] ids = new long[20];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = c.id(i);
        }
        c.ownRows(conn, ids);
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO drv_items (id, val) VALUES (?, ?)");
                Statement st = conn.createStatement()) {
            for (int i = 0; i < ids.length; i++) {
                if (i % 2 == 0) {
                    ps.setLong(1, ids[i]);
                    ps.setString(2, "v" + i);
                    ps.executeUpdate();
                } else {
                    st.executeUpdate("INSERT INTO drv_items (id, val) VALUES (" + ids[i] + ", 'v" + i + "')");
                }
            }
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT val FROM drv_items WHERE id = ?");
                Statement st = conn.createStatement()) {
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < ids.length; i++) {
                    ps.setLong(1, ids[i]);
                    try (ResultSet rs = ps.executeQuery()) {
                        expect(rs.next() && ("v" + i).equals(rs.getString(1)), "prepared read of id " + ids[i]);
                    }
                    try (ResultSet rs = st.executeQuery("SELECT val FROM drv_items WHERE id = " + ids[i])) {
                        expect(rs.next() && ("v" + i).equals(rs.getString(1)), "plain read of id " + ids[i]);
                    }
                }
            }
        }
    }

    /**
     * prepared_across_ddl: a query run past prepareThreshold (so it is the
     * server-prepared S_n) before and after `DROP TABLE; CREATE TABLE`
     * changes its column from int to text. Directly, pgjdbc sees "cached
     * plan must not change result type", re-prepares and retries by itself:
     * the application sees no error. Also a fresh connection preparing it at
     * once (prepareThreshold=1) and one that never server-prepares
     * (prepareThreshold=0).
     */
    static void preparedAcrossDdl(Ctx c) throws Exception {
        Connection a = c.connect();
        Connection never = c.connect("prepareThreshold=0");
        c.scratchTable(a, "drv_jdbc_ddl", "id bigint PRIMARY KEY, x int");
        // A keyless INSERT into an unsharded table is refused on a sharded
        // cluster: there the table stays empty and only the types are checked.
        if (!c.sharded()) {
            exec(a, "INSERT INTO drv_jdbc_ddl VALUES (1, 42)");
        }
        String q = "SELECT x FROM drv_jdbc_ddl WHERE id = ?";
        PreparedStatement psA = a.prepareStatement(q);
        PreparedStatement psNever = never.prepareStatement(q);
        for (int i = 0; i < 7; i++) {
            checkDdlQuery("before DDL, run " + (i + 1), c, psA, Types.INTEGER, "42");
            checkDdlQuery("before DDL, unprepared conn", c, psNever, Types.INTEGER, "42");
        }
        exec(a, "DROP TABLE drv_jdbc_ddl");
        exec(a, "CREATE TABLE drv_jdbc_ddl (id bigint PRIMARY KEY, x text)");
        if (!c.sharded()) {
            exec(a, "INSERT INTO drv_jdbc_ddl VALUES (1, 'a')");
        }
        List<String> problems = new ArrayList<>();
        Connection fresh = c.connect("prepareThreshold=1");
        try (PreparedStatement ps = fresh.prepareStatement(q)) {
            for (int i = 0; i < 3; i++) {
                tryDdlQuery(problems, "after DDL, fresh conn run " + (i + 1), c, ps);
            }
        }
        for (int i = 0; i < 3; i++) {
            tryDdlQuery(problems, "after DDL, unprepared conn run " + (i + 1), c, psNever);
        }
        for (int i = 0; i < 3; i++) {
            tryDdlQuery(problems, "after DDL, server-prepared S_n run " + (i + 1), c, psA);
        }
        if (!problems.isEmpty()) {
            throw new CheckFailed(String.join("; ", problems));
        }
    }

    static void tryDdlQuery(List<String> problems, String what, Ctx c, PreparedStatement ps) {
        try {
            checkDdlQuery(what, c, ps, Types.VARCHAR, "a");
        } catch (CheckFailed e) {
            problems.add(e.getMessage());
        } catch (SQLException e) {
            problems.add(what + ": " + describe(e));
        }
    }

    static void checkDdlQuery(String what, Ctx c, PreparedStatement ps, int type, String val)
            throws SQLException, CheckFailed {
        ps.setLong(1, 1);
        try (ResultSet rs = ps.executeQuery()) {
            ResultSetMetaData md = rs.getMetaData();
            expect(md.getColumnType(1) == type, what + ": column type " + md.getColumnTypeName(1));
            if (c.sharded()) {
                expect(!rs.next(), what + ": a row from an empty table");
            } else {
                expect(rs.next() && val.equals(rs.getString(1)), what + ": want " + val);
            }
        }
    }

    /**
     * named_statements_across_connections: two connections whose different
     * queries are both server-prepared under the same name (S_1, S_2: each
     * connection numbers its own), interleaved, each getting its own answers;
     * then one closes its statement and prepares another.
     */
    static void namedStatements(Ctx c) throws Exception {
        Connection a = c.connect("prepareThreshold=1");
        Connection b = c.connect("prepareThreshold=1");
        try (PreparedStatement pa = a.prepareStatement("SELECT ?::int + 1");
                PreparedStatement pb = b.prepareStatement("SELECT ?::text || 'x'")) {
            for (int i = 0; i < 10; i++) {
                pa.setInt(1, i);
                try (ResultSet rs = pa.executeQuery()) {
                    expect(rs.next() && rs.getInt(1) == i + 1, "conn A run " + i);
                }
                pb.setString(1, "s" + i);
                try (ResultSet rs = pb.executeQuery()) {
                    expect(rs.next() && ("s" + i + "x").equals(rs.getString(1)), "conn B run " + i);
                }
            }
        }
        try (PreparedStatement pa = a.prepareStatement("SELECT ?::text || 'y', 2");
                PreparedStatement pb = b.prepareStatement("SELECT ?::int * 3")) {
            for (int i = 0; i < 5; i++) {
                pa.setString(1, "t" + i);
                try (ResultSet rs = pa.executeQuery()) {
                    expect(rs.next() && ("t" + i + "y").equals(rs.getString(1)) && rs.getInt(2) == 2,
                            "conn A second statement run " + i);
                }
                pb.setInt(1, i);
                try (ResultSet rs = pb.executeQuery()) {
                    expect(rs.next() && rs.getInt(1) == 3 * i, "conn B second statement run " + i);
                }
            }
        }
    }

    /**
     * describe_errors: `select 1/0` and a query on a missing table fail the
     * same way three times, unprepared and server-prepared (prepareThreshold=1),
     * and a good query works afterwards.
     */
    static void describeErrors(Ctx c) throws Exception {
        for (String threshold : new String[] {"prepareThreshold=5", "prepareThreshold=1"}) {
            Connection conn = c.connect(threshold);
            String[][] cases = {
                {"select 1/0", "22012"},
                {"select * from no_such_table", "42P01"},
            };
            for (String[] cs : cases) {
                try (PreparedStatement ps = conn.prepareStatement(cs[0])) {
                    for (int i = 1; i <= 3; i++) {
                        expectState(threshold + ": " + cs[0] + " try " + i, cs[1], () -> ps.executeQuery().close());
                    }
                }
            }
            try (PreparedStatement ps = conn.prepareStatement("SELECT 1/?::int")) {
                for (int i = 1; i <= 3; i++) {
                    ps.setInt(1, 0);
                    expectState(threshold + ": SELECT 1/?::int with 0 try " + i, "22012", () -> ps.executeQuery().close());
                }
            }
            expect("2".equals(queryString(conn, "SELECT ?::int + 1", 1)), threshold + ": good query afterwards");
        }
    }

    /** large_param_count: 32767, 32768 and 65535 parameters (pgjdbc's cap). */
    static void largeParamCount(Ctx c) throws Exception {
        Connection conn = c.connect();
        for (int n : new int[] {32767, 32768, 65535}) {
            StringBuilder sb = new StringBuilder("SELECT cardinality(ARRAY[");
            for (int i = 0; i < n; i++) {
                sb.append(i == 0 ? "?::int" : ",?::int");
            }
            sb.append("])");
            try (PreparedStatement ps = conn.prepareStatement(sb.toString())) {
                for (int i = 0; i < n; i++) {
                    ps.setInt(i + 1, i);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    expect(rs.next() && rs.getInt(1) == n, n + " parameters: wrong count");
                } catch (SQLException e) {
                    throw new CheckFailed(n + " parameters: " + describe(e));
                }
            }
        }
    }

    /** batch_inserts: executeBatch of 50 keyed inserts (one Sync), all readable by key. */
    static void batchInserts(Ctx c) throws Exception {
        batchInsertAndRead(c, c.connect(), 50);
    }

    /**
     * batch_rewrite_inserts: the same with reWriteBatchedInserts=true, which
     * turns the batch into multi-row INSERT ... VALUES (...), (...) (up to 128
     * rows per statement, the statements of a batch before one Sync). Sharded:
     * a batch of 50 keys all on shard 0, one of 50 all on shard 1, one of 20
     * alternating between the shards and one of 300 consecutive ids (split by
     * pgshard into one INSERT per shard, their parameters renumbered) each put
     * every row where it belongs (a row on the wrong shard would violate that
     * shard's partition constraint) and read back by key.
     */
    static void batchRewriteInserts(Ctx c) throws Exception {
        Connection conn = c.connect("reWriteBatchedInserts=true");
        if (!c.sharded()) {
            batchInsertAndRead(c, conn, 100);
            return;
        }
        List<Long> s0 = c.idsOnShard(0);
        List<Long> s1 = c.idsOnShard(1);
        expect(s0.size() >= 60 && s1.size() >= 60, "too few ids per shard: " + s0.size() + ", " + s1.size());
        batchInsertAndRead(c, conn, s0.subList(0, 50).stream().mapToLong(Long::longValue).toArray());
        batchInsertAndRead(c, conn, s1.subList(0, 50).stream().mapToLong(Long::longValue).toArray());
        long[] mixed = new long[20];
        for (int i = 0; i < mixed.length; i++) {
            mixed[i] = (i % 2 == 0 ? s0 : s1).get(50 + i / 2);
        }
        batchInsertAndRead(c, conn, mixed);
        long[] many = new long[300];
        for (int i = 0; i < many.length; i++) {
            many[i] = c.id(600 + i);
        }
        batchInsertAndRead(c, conn, many);
    }

    static void batchInsertAndRead(Ctx c, Connection conn, int n) throws Exception {
        long[] ids = new long[n];
        for (int i = 0; i < n; i++) {
            ids[i] = c.id(i);
        }
        batchInsertAndRead(c, conn, ids);
    }

    static void batchInsertAndRead(Ctx c, Connection conn, long[] ids) throws Exception {
        int n = ids.length;
        c.ownRows(conn, ids);
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO drv_items (id, val) VALUES (?, ?)")) {
            for (int i = 0; i < n; i++) {
                ps.setLong(1, ids[i]);
                ps.setString(2, "b" + i);
                ps.addBatch();
            }
            try {
                ps.executeBatch();
            } catch (BatchUpdateException e) {
                SQLException next = e.getNextException();
                throw new CheckFailed("executeBatch: " + describe(next != null ? next : e));
            }
        }
        for (int i = 0; i < n; i++) {
            String v = itemVal(conn, ids[i]);
            expect(("b" + i).equals(v), "id " + ids[i] + " read back " + v);
        }
    }

    /**
     * batch_error_mid_batch: executeBatch of 20 keyed updates of one row, the
     * 10th dividing by zero. pgjdbc sends the batch with one Sync, so as in
     * Postgres it is one implicit transaction: BatchUpdateException with
     * 22012, the earlier updates rolled back, and the connection works.
     */
    static void batchError(Ctx c) throws Exception {
        Connection conn = c.connect();
        long id = c.id(0);
        c.ownRows(conn, id);
        insertItem(conn, id, "orig");
        try (PreparedStatement ps = conn.prepareStatement(
                "UPDATE drv_items SET val = (?::int / ?::int)::text WHERE id = ?")) {
            for (int i = 0; i < 20; i++) {
                ps.setInt(1, i);
                ps.setInt(2, i == 9 ? 0 : 1);
                ps.setLong(3, id);
                ps.addBatch();
            }
            try {
                ps.executeBatch();
                throw new CheckFailed("executeBatch with a division by zero succeeded");
            } catch (BatchUpdateException e) {
                SQLException cause = e.getNextException() != null ? e.getNextException() : e;
                expect("22012".equals(cause.getSQLState()), "executeBatch: want 22012, got " + describe(cause));
            }
        }
        String v = itemVal(conn, id);
        expect("orig".equals(v), "after the failed batch val = " + v + ", want orig (implicit transaction not rolled back)");
    }

    /**
     * cursor_fetch_size: autocommit off + setFetchSize(10), so pgjdbc reads
     * through a named portal (C_n) 10 rows per Execute: 1000 rows of
     * generate_series, a keyless read of 30 drv_items rows and a keyed join.
     * Sharded: the keyless read goes to both shards, and pgshard returns
     * their merged rows 10 at a time (PortalSuspended between parts).
     */
    static void cursorFetchSize(Ctx c) throws Exception {
        Connection conn = c.connect();
        long[] ids = new long[30];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = c.id(i);
        }
        c.ownRows(conn, ids);
        for (long id : ids) {
            insertItem(conn, id, "f");
        }
        List<String> problems = new ArrayList<>();
        conn.setAutoCommit(false);
        String[][] queries = {
            {"generate_series", "SELECT g FROM generate_series(1, 1000) g", "1000"},
            {"keyless drv_items read", "SELECT id FROM drv_items WHERE id >= " + ids[0] + " AND id < " + (ids[0] + 30), "30"},
            {"keyed join", "SELECT g FROM generate_series(1, 1000) g, drv_items d WHERE d.id = " + ids[0], "1000"},
        };
        for (String[] q : queries) {
            try (PreparedStatement ps = conn.prepareStatement(q[1])) {
                ps.setFetchSize(10);
                int rows = 0;
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        rows++;
                    }
                }
                if (rows != Integer.parseInt(q[2])) {
                    problems.add(q[0] + ": " + rows + " rows, want " + q[2]);
                }
                conn.commit();
            } catch (SQLException e) {
                problems.add(q[0] + ": " + describe(e));
                conn.rollback();
            }
        }
        if (!problems.isEmpty()) {
            throw new CheckFailed(String.join("; ", problems));
        }
    }

    /**
     * copy: CopyManager. Unsharded: copyIn of 1000 rows into a scratch table
     * and copyOut of them. Sharded: copyOut of a keyed query, and copyIn into
     * drv_items either works (rows readable by key) or is refused with an
     * error, after which the connection still works.
     */
    static void copy(Ctx c) throws Exception {
        Connection conn = c.connect();
        CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
        if (c.sharded()) {
            long[] ids = new long[11];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = c.id(i);
            }
            c.ownRows(conn, ids);
            insertItem(conn, ids[0], "copy me");
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            cm.copyOut("COPY (SELECT id, val FROM drv_items WHERE id = " + ids[0] + ") TO STDOUT", out);
            String got = out.toString(StandardCharsets.UTF_8);
            expect(got.equals(ids[0] + "\tcopy me\n"), "keyed copyOut: " + got);
            StringBuilder in = new StringBuilder();
            for (int i = 1; i < ids.length; i++) {
                in.append(ids[i]).append("\tcopied\n");
            }
            try {
                long n = cm.copyIn("COPY drv_items (id, val) FROM STDIN", new StringReader(in.toString()));
                expect(n == ids.length - 1, "copyIn into drv_items: " + n + " rows");
                for (int i = 1; i < ids.length; i++) {
                    expect("copied".equals(itemVal(conn, ids[i])), "row " + ids[i] + " after copyIn");
                }
            } catch (SQLException e) {
                expect(e.getSQLState() != null && !e.getSQLState().startsWith("08"),
                        "copyIn into drv_items not refused cleanly: " + describe(e));
            }
            expect("copy me".equals(itemVal(conn, ids[0])), "keyed select after copyIn");
            return;
        }
        c.scratchTable(conn, "drv_jdbc_copy", "a int, b text");
        StringBuilder in = new StringBuilder();
        for (int i = 0; i < 1000; i++) {
            in.append(i).append("\trow\\t").append(i).append('\n');
        }
        long n = cm.copyIn("COPY drv_jdbc_copy (a, b) FROM STDIN", new StringReader(in.toString()));
        expect(n == 1000, "copyIn: " + n + " rows");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        long m = cm.copyOut("COPY (SELECT a, b FROM drv_jdbc_copy ORDER BY a) TO STDOUT", out);
        expect(m == 1000, "copyOut: " + m + " rows");
        expect(out.toString(StandardCharsets.UTF_8).equals(in.toString()), "copyOut differs from what went in");
        expect("499500".equals(queryString(conn, "SELECT sum(a) FROM drv_jdbc_copy WHERE b LIKE ?", "row%")),
                "sum after copy");
    }

    /**
     * tx_error_aborts: in a transaction (autocommit off) after an error the
     * next statement gets 25P02 until rollback, with plain Statements, with
     * PreparedStatements, and after a keyed statement picked the shard.
     */
    static void txErrorAborts(Ctx c) throws Exception {
        Connection conn = c.connect();
        long id = c.id(0);
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            expectState("statement: SELECT 1/0", "22012", () -> st.executeQuery("SELECT 1/0").close());
            expectState("statement: SELECT 1 after the error", "25P02", () -> st.executeQuery("SELECT 1").close());
        }
        conn.rollback();
        expect("1".equals(queryString(conn, "SELECT 1")), "after rollback");
        conn.commit();
        try (PreparedStatement bad = conn.prepareStatement("SELECT 1/?::int");
                PreparedStatement good = conn.prepareStatement("SELECT ?::int")) {
            bad.setInt(1, 0);
            good.setInt(1, 1);
            expectState("prepared: SELECT 1/?::int", "22012", () -> bad.executeQuery().close());
            expectState("prepared: SELECT ?::int after the error", "25P02", () -> good.executeQuery().close());
        }
        conn.rollback();
        try (PreparedStatement first = conn.prepareStatement("SELECT val FROM drv_items WHERE id = ?");
                PreparedStatement bad = conn.prepareStatement(
                        "SELECT val FROM drv_items WHERE id = ? AND 1/?::int = 1")) {
            first.setLong(1, id);
            first.executeQuery().close();
            bad.setLong(1, id);
            bad.setInt(2, 0);
            expectState("keyed: failing statement", "22012", () -> bad.executeQuery().close());
            expectState("keyed: statement after the error", "25P02", () -> first.executeQuery().close());
        }
        conn.rollback();
        expect("5".equals(queryString(conn, "SELECT ?::int", 5)), "after the last rollback");
        conn.commit();
    }

    /**
     * savepoints: setSavepoint / rollback(sp) / releaseSavepoint with an
     * error inside the first savepoint, all on one drv_items row (one shard).
     */
    static void savepoints(Ctx c) throws Exception {
        Connection conn = c.connect();
        long id = c.id(0);
        c.ownRows(conn, id);
        conn.setAutoCommit(false);
        insertItem(conn, id, "v1");
        try (PreparedStatement set = conn.prepareStatement("UPDATE drv_items SET val = ? WHERE id = ?");
                PreparedStatement bad = conn.prepareStatement(
                        "SELECT val FROM drv_items WHERE id = ? AND 1/?::int = 1")) {
            Savepoint sp1 = conn.setSavepoint();
            set.setString(1, "v2");
            set.setLong(2, id);
            set.executeUpdate();
            bad.setLong(1, id);
            bad.setInt(2, 0);
            expectState("error in savepoint 1", "22012", () -> bad.executeQuery().close());
            conn.rollback(sp1);
            String v = itemVal(conn, id);
            expect("v1".equals(v), "after rollback to savepoint: " + v);
            Savepoint sp2 = conn.setSavepoint("drv_jdbc_sp2");
            set.setString(1, "v3");
            set.executeUpdate();
            conn.releaseSavepoint(sp2);
        }
        conn.commit();
        conn.setAutoCommit(true);
        String v = itemVal(conn, id);
        expect("v3".equals(v), "after commit: " + v);
    }

    /** listen_notify (session mode): notifications reach a LISTENing connection. */
    static void listenNotify(Ctx c) throws Exception {
        Connection listener = c.connect();
        Connection sender = c.connect();
        exec(listener, "LISTEN drv_jdbc_chan");
        PGConnection pg = listener.unwrap(PGConnection.class);
        for (String payload : new String[] {"hello", "again"}) {
            queryString(sender, "SELECT pg_notify(?, ?)", "drv_jdbc_chan", payload);
            PGNotification[] ns = pg.getNotifications(5000);
            expect(ns != null && ns.length == 1, "notification " + payload + ": got " + (ns == null ? 0 : ns.length));
            expect(ns[0].getName().equals("drv_jdbc_chan") && ns[0].getParameter().equals(payload),
                    "notification: " + ns[0].getName() + " " + ns[0].getParameter());
        }
    }

    /**
     * cancel: Statement.cancel() from another thread and setQueryTimeout(1)
     * (both send a CancelRequest) stop `select pg_sleep(10)` with 57014
     * quickly, twice each, and the connection works afterwards.
     */
    static void cancel(Ctx c) throws Exception {
        Connection conn = c.connect();
        ExecutorService canceller = Executors.newSingleThreadExecutor();
        try {
            for (int i = 1; i <= 4; i++) {
                boolean byTimeout = i > 2;
                String what = (byTimeout ? "setQueryTimeout " : "Statement.cancel ") + i;
                try (Statement st = conn.createStatement()) {
                    if (byTimeout) {
                        st.setQueryTimeout(1);
                    } else {
                        canceller.submit(() -> {
                            Thread.sleep(500);
                            st.cancel();
                            return null;
                        });
                    }
                    long start = System.nanoTime();
                    expectState(what, "57014", () -> st.executeQuery("select pg_sleep(10)").close());
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    expect(ms < 4000, what + ": cancelled only after " + ms + " ms");
                }
                expect("3".equals(queryString(conn, "SELECT ?::int", 3)), what + ": query afterwards");
            }
        } finally {
            canceller.shutdownNow();
        }
    }

    /**
     * concurrent_connections: 16 threads (on a session-mode cluster, as many
     * as server connections: each client holds one), each on its own
     * connection, run 10 short keyed transactions each over 4 server
     * connections; all succeed.
     */
    static void concurrentConnections(Ctx c) throws Exception {
        int threads = c.env.mode.equals("session") ? c.env.poolSize : 16;
        int perThread = 10;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicInteger failures = new AtomicInteger();
        List<String> firstError = Collections.synchronizedList(new ArrayList<>());
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            futures.add(pool.submit(() -> {
                try {
                    Connection conn = c.connect();
                    long[] ids = new long[perThread];
                    for (int i = 0; i < perThread; i++) {
                        ids[i] = c.id(thread * perThread + i);
                    }
                    c.ownRows(conn, ids);
                    conn.setAutoCommit(false);
                    for (long id : ids) {
                        insertItem(conn, id, Long.toString(id));
                        String v = itemVal(conn, id);
                        if (!Long.toString(id).equals(v)) {
                            throw new CheckFailed("id " + id + " read back " + v);
                        }
                        conn.commit();
                    }
                    conn.setAutoCommit(true);
                    for (long id : ids) {
                        String v = itemVal(conn, id);
                        if (!Long.toString(id).equals(v)) {
                            throw new CheckFailed("id " + id + " after commit read back " + v);
                        }
                    }
                    conn.close();
                } catch (Exception e) {
                    failures.incrementAndGet();
                    firstError.add(describe(e));
                }
                return null;
            }));
        }
        pool.shutdown();
        for (Future<?> f : futures) {
            f.get();
        }
        expect(failures.get() == 0, failures.get() + " of " + threads + " threads failed, first: "
                + (firstError.isEmpty() ? "" : firstError.get(0)));
    }

    /**
     * fanout_error_recovery: a keyless read (sent to every shard on a sharded
     * cluster, each holding some of the check's rows) failing at run time with 0 and working with 2, six times (so
     * past prepareThreshold), then on a new connection.
     */
    static void fanoutErrorRecovery(Ctx c) throws Exception {
        String q = "SELECT id FROM drv_items WHERE val = (1 / ?::int)::text";
        // Rows on every shard: the division must run on each whatever plan
        // the server picks (a generic plan evaluates it per row, so on an
        // empty table it would not fail at all).
        try (Connection conn = c.connect()) {
            long[] ids = new long[16];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = c.id(i);
            }
            c.ownRows(conn, ids);
            for (long id : ids) {
                insertItem(conn, id, "x");
            }
        }
        for (String who : new String[] {"first conn", "new conn"}) {
            Connection conn = c.connect();
            try (PreparedStatement ps = conn.prepareStatement(q)) {
                for (int round = 1; round <= 6; round++) {
                    ps.setInt(1, 0);
                    expectState(who + " round " + round + " with 0", "22012", () -> ps.executeQuery().close());
                    ps.setInt(1, 2);
                    try {
                        ps.executeQuery().close();
                    } catch (SQLException e) {
                        throw new CheckFailed(who + " round " + round + " with 2: " + describe(e));
                    }
                }
            }
        }
    }

    /**
     * admin_show_pools: the admin console (preferQueryMode=simple) answers
     * SHOW POOLS and SHOW CLIENTS, and its counters are sane (never negative
     * or wrapped around). Passes without checking when no admin user is
     * given, as when the checks run against Postgres directly.
     */
    static void adminShowPools(Ctx c) throws Exception {
        if (c.env.adminUser.isEmpty()) {
            return;
        }
        Properties p = c.props(c.env.adminUser, c.env.adminPassword);
        p.setProperty("preferQueryMode", "simple");
        Connection conn = DriverManager.getConnection(c.url("admin"), p);
        c.conns.add(conn);
        for (String cmd : new String[] {"SHOW POOLS", "SHOW CLIENTS"}) {
            List<String> bad = new ArrayList<>();
            int rows = 0;
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(cmd)) {
                ResultSetMetaData md = rs.getMetaData();
                while (rs.next()) {
                    rows++;
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        String col = md.getColumnName(i);
                        String v = rs.getString(i);
                        if (!cmd.equals("SHOW POOLS") || v == null || !(col.startsWith("cl_") || col.startsWith("sv_"))) {
                            continue;
                        }
                        try {
                            long n = Long.parseLong(v);
                            if (n < 0 || n > 10000) {
                                bad.add(col + "=" + v);
                            }
                        } catch (NumberFormatException e) {
                            bad.add(col + "=" + v);
                        }
                    }
                }
            } catch (SQLException e) {
                throw new CheckFailed(cmd + ": " + describe(e));
            }
            expect(!cmd.equals("SHOW POOLS") || rows > 0, "SHOW POOLS: no rows");
            expect(bad.isEmpty(), cmd + ": insane counters " + String.join(", ", bad));
        }
    }

    // ----- runner -----

    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !args[0].equals("pgjdbc")) {
            System.err.println("usage: DriverChecks pgjdbc");
            System.exit(2);
        }
        Env env;
        try {
            env = new Env();
        } catch (IllegalStateException e) {
            System.err.println("DriverChecks: " + e.getMessage());
            System.exit(2);
            return;
        }
        DriverManager.setLoginTimeout(5);
        String only = System.getenv().getOrDefault("PGSHARD_CHECKS", ""); // optional subset, for debugging
        Set<String> onlySet = only.isEmpty() ? null : new HashSet<>(List.of(only.split(",")));
        ExecutorService runner = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        int passed = 0;
        int failed = 0;
        List<Check> all = new ArrayList<>(checks());
        all.addAll(ColumnsChecks.checks());
        for (int i = 0; i < all.size(); i++) {
            Check check = all.get(i);
            if (!check.modes().contains(env.mode) || (onlySet != null && !onlySet.contains(check.name()))) {
                continue;
            }
            Ctx ctx = new Ctx(env, 7_200_000_000L + i * 1000L);
            Future<?> f = runner.submit(() -> {
                check.body().run(ctx);
                return null;
            });
            String failure = null;
            boolean hung = false;
            try {
                f.get(check.timeoutSeconds(), TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                hung = true;
                f.cancel(true);
                failure = "hung: no answer within the check's " + check.timeoutSeconds() + " s deadline";
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable cause = e.getCause();
                failure = cause instanceof CheckFailed ? cause.getMessage() : describe(cause);
            }
            ctx.finish(hung, runner);
            if (failure == null) {
                passed++;
                System.out.println("ok " + check.name());
            } else {
                failed++;
                System.out.println("FAIL " + check.name() + ": " + failure.replace('\n', ' '));
            }
            System.out.flush();
        }
        System.out.println("pgjdbc " + env.mode + ": " + passed + " passed, " + failed + " failed");
        System.out.flush();
        System.exit(failed == 0 ? 0 : 1);
    }
}
