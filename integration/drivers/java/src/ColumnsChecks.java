// Driver checks for pgjdbc against pgshard, mode columns (two shards, only a
// column-only [[sharded_tables]] entry on `id`, no table): the application's
// own tables are created and written at once, by the connection that
// created them and by others connected before: a table with id (sharded by
// it) and one without (a copy on every shard), INSERTs in the simple query
// mode (preferQueryMode=simple) and the extended one (unnamed, then
// server-prepared after prepareThreshold, executeBatch), CopyManager.copyIn,
// inside a transaction (autocommit off) too; ALTER TABLE ADD COLUMN followed
// at once by writes of the new column; adding the key column to a table
// without it refused. Where the rows landed is read from each shard directly.

import java.io.StringReader;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

final class ColumnsChecks {
    private ColumnsChecks() {
    }

    static final String KEYED = "id bigint PRIMARY KEY, val text";
    static final String PLAIN = "k text PRIMARY KEY, v text";

    static List<DriverChecks.Check> checks() {
        Set<String> columns = Set.of("columns");
        return List.of(
                new DriverChecks.Check("columns_create_insert", columns, 20, ColumnsChecks::createInsert),
                new DriverChecks.Check("columns_create_copy", columns, 20, ColumnsChecks::createCopy),
                new DriverChecks.Check("columns_add_column", columns, 20, ColumnsChecks::addColumn),
                new DriverChecks.Check("columns_in_transaction", columns, 20, ColumnsChecks::inTransaction),
                new DriverChecks.Check("columns_add_key_refused", columns, 20, ColumnsChecks::addKeyRefused));
    }

    /** Rows as text, NULL as "NULL", sorted: for comparing rows of any table. */
    static List<String> sorted(List<String> rows) {
        List<String> out = new ArrayList<>(rows);
        out.sort(null);
        return out;
    }

    static List<String> rows(Connection conn, String sql, Object... args) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                int n = rs.getMetaData().getColumnCount();
                while (rs.next()) {
                    StringBuilder row = new StringBuilder();
                    for (int i = 1; i <= n; i++) {
                        String v = rs.getString(i);
                        row.append(i > 1 ? "|" : "").append(v == null ? "NULL" : v);
                    }
                    out.add(row.toString());
                }
            }
        }
        return out;
    }

    /** Each shard's rows of sql, read from the shard directly. */
    static List<List<String>> perShard(DriverChecks.Ctx c, String sql) throws SQLException {
        List<List<String>> out = new ArrayList<>();
        for (int i = 0; i < c.env.shardPorts.size(); i++) {
            String url = "jdbc:postgresql://" + c.env.host + ":" + c.env.shardPorts.get(i) + "/shard_" + i;
            try (Connection conn = DriverManager.getConnection(url, c.props(c.env.user, c.env.password))) {
                out.add(rows(conn, sql));
            }
        }
        return out;
    }

    /**
     * want (rows whose first value is id) is table sharded by id: each row on
     * exactly one shard, every shard holding some, and pgshard reading each
     * by its key from where it is.
     */
    static void expectSharded(DriverChecks.Ctx c, Connection conn, String table, String columns, List<String> want)
            throws Exception {
        List<List<String>> shards = perShard(c, "SELECT " + columns + " FROM " + table);
        List<String> all = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        for (List<String> rows : shards) {
            all.addAll(rows);
            counts.add(rows.size());
        }
        DriverChecks.expect(sorted(all).equals(sorted(want)),
                table + ": the shards' rows together are " + sorted(all) + ", want " + sorted(want));
        DriverChecks.expect(!counts.contains(0), table + ": a shard holds none of the " + want.size() + " rows: " + counts);
        for (String row : want) {
            long id = Long.parseLong(row.substring(0, row.indexOf('|')));
            List<String> got = rows(conn, "SELECT " + columns + " FROM " + table + " WHERE id = ?", id);
            DriverChecks.expect(got.equals(List.of(row)), table + ": id " + id + " read by key through pgshard: " + got);
        }
    }

    /** Every shard holds all the rows want of table. */
    static void expectCopies(DriverChecks.Ctx c, String table, String columns, List<String> want) throws Exception {
        List<List<String>> shards = perShard(c, "SELECT " + columns + " FROM " + table);
        for (int i = 0; i < shards.size(); i++) {
            DriverChecks.expect(sorted(shards.get(i)).equals(sorted(want)),
                    table + ": rows on shard " + i + " are " + sorted(shards.get(i)) + ", want " + sorted(want));
        }
    }

    static List<String> keyedRows(int from, int to, boolean note) {
        List<String> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(i + "|v" + i + (note ? "|n" + i : ""));
        }
        return out;
    }

    /** This check's table, dropped before and after. */
    static String table(DriverChecks.Ctx c, Connection conn, String name) throws SQLException {
        String table = "drv_jdbc_" + name;
        DriverChecks.exec(conn, "DROP TABLE IF EXISTS " + table);
        c.cleanupSql.add("DROP TABLE IF EXISTS " + table);
        return table;
    }

    static void step(String what, DriverChecks.SqlAction action) throws DriverChecks.CheckFailed {
        try {
            action.run();
        } catch (SQLException e) {
            throw new DriverChecks.CheckFailed(what + ": " + DriverChecks.describe(e));
        }
    }

    static void insert(Connection conn, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            ps.executeUpdate();
        }
    }

    static long copyIn(Connection conn, String sql, String text) throws SQLException, java.io.IOException {
        CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
        return cm.copyIn(sql, new StringReader(text));
    }

    static void createInsert(DriverChecks.Ctx c) throws Exception {
        Connection a = c.connect();
        Connection b = c.connect();
        Connection s = c.connect("preferQueryMode=simple");
        String keyed = table(c, a, "ci_k");
        String plain = table(c, a, "ci_p");
        DriverChecks.exec(a, "CREATE TABLE " + keyed + " (" + KEYED + ")");
        step("simple INSERT without a column list", () -> DriverChecks.exec(s, "INSERT INTO " + keyed + " VALUES (1, 'v1')"));
        step("simple INSERT with parameters", () -> insert(s, "INSERT INTO " + keyed + " (id, val) VALUES (?, ?)", 2L, "v2"));
        // One PreparedStatement past prepareThreshold (5): server-prepared.
        try (PreparedStatement ps = b.prepareStatement("INSERT INTO " + keyed + " (id, val) VALUES (?, ?)")) {
            for (int i = 3; i < 11; i++) {
                ps.setLong(1, i);
                ps.setString(2, "v" + i);
                int n = i;
                step("extended INSERT " + n, ps::executeUpdate);
            }
        }
        try (PreparedStatement ps = b.prepareStatement("INSERT INTO " + keyed + " VALUES (?, ?)")) {
            for (int i = 11; i < 17; i++) {
                ps.setLong(1, i);
                ps.setString(2, "v" + i);
                ps.addBatch();
            }
            step("executeBatch without a column list", ps::executeBatch);
        }
        expectSharded(c, a, keyed, "id, val", keyedRows(1, 17, false));
        // executeUpdate, as schema tools run DDL (an Execute with a row limit).
        try (Statement st = a.createStatement()) {
            step("executeUpdate of CREATE TABLE", () -> st.executeUpdate("CREATE TABLE " + plain + " (" + PLAIN + ")"));
        }
        step("simple INSERT into the table without id", () -> DriverChecks.exec(s, "INSERT INTO " + plain + " VALUES ('s', 'simple')"));
        step("extended INSERT into it", () -> insert(b, "INSERT INTO " + plain + " (k, v) VALUES (?, ?)", "e", "extended"));
        expectCopies(c, plain, "k, v", List.of("s|simple", "e|extended"));
    }

    static void createCopy(DriverChecks.Ctx c) throws Exception {
        Connection a = c.connect();
        String keyed = table(c, a, "cc_k");
        String plain = table(c, a, "cc_p");
        DriverChecks.exec(a, "CREATE TABLE " + keyed + " (" + KEYED + ")");
        StringBuilder text = new StringBuilder();
        for (int i = 1; i < 21; i++) {
            text.append(i).append("\tv").append(i).append('\n');
        }
        long n = copyIn(a, "COPY " + keyed + " (id, val) FROM STDIN", text.toString());
        DriverChecks.expect(n == 20, "copyIn with a column list: " + n + " rows");
        StringBuilder csv = new StringBuilder();
        for (int i = 21; i < 41; i++) {
            csv.append(i).append(",v").append(i).append('\n');
        }
        n = copyIn(a, "COPY " + keyed + " FROM STDIN (FORMAT csv)", csv.toString());
        DriverChecks.expect(n == 20, "copyIn csv without a column list: " + n + " rows");
        expectSharded(c, a, keyed, "id, val", keyedRows(1, 41, false));
        DriverChecks.exec(a, "CREATE TABLE " + plain + " (" + PLAIN + ")");
        n = copyIn(a, "COPY " + plain + " FROM STDIN", "k0\tv0\nk1\tv1\nk2\tv2\n");
        DriverChecks.expect(n == 3, "copyIn into the table without id: " + n + " rows");
        expectCopies(c, plain, "k, v", List.of("k0|v0", "k1|v1", "k2|v2"));
    }

    static void addColumn(DriverChecks.Ctx c) throws Exception {
        Connection a = c.connect();
        Connection b = c.connect();
        Connection s = c.connect("preferQueryMode=simple");
        String keyed = table(c, a, "ac_k");
        String plain = table(c, a, "ac_p");
        DriverChecks.exec(a, "CREATE TABLE " + keyed + " (" + KEYED + ")");
        DriverChecks.exec(a, "CREATE TABLE " + plain + " (" + PLAIN + ")");
        insert(b, "INSERT INTO " + keyed + " (id, val) VALUES (?, ?)", 1L, "v1");
        insert(b, "INSERT INTO " + plain + " (k, v) VALUES (?, ?)", "a", "before");
        DriverChecks.exec(a, "ALTER TABLE " + keyed + " ADD COLUMN note text");
        step("simple INSERT of the new column", () -> DriverChecks.exec(s, "INSERT INTO " + keyed + " (id, val, note) VALUES (2, 'v2', 'n2')"));
        step("simple INSERT without a column list", () -> DriverChecks.exec(s, "INSERT INTO " + keyed + " VALUES (3, 'v3', 'n3')"));
        try (PreparedStatement ps = b.prepareStatement("INSERT INTO " + keyed + " (id, val, note) VALUES (?, ?, ?)")) {
            for (int i = 4; i < 10; i++) {
                ps.setLong(1, i);
                ps.setString(2, "v" + i);
                ps.setString(3, "n" + i);
                int n = i;
                step("extended INSERT " + n, ps::executeUpdate);
            }
        }
        step("extended INSERT without a column list", () -> insert(a, "INSERT INTO " + keyed + " VALUES (?, ?, ?)", 10L, "v10", "n10"));
        StringBuilder text = new StringBuilder();
        for (int i = 11; i < 17; i++) {
            text.append(i).append("\tv").append(i).append("\tn").append(i).append('\n');
        }
        step("copyIn of the new column", () -> {
            try {
                copyIn(b, "COPY " + keyed + " (id, val, note) FROM STDIN", text.toString());
            } catch (java.io.IOException e) {
                throw new SQLException(e);
            }
        });
        List<String> want = new ArrayList<>(List.of("1|v1|NULL"));
        want.addAll(keyedRows(2, 17, true));
        expectSharded(c, a, keyed, "id, val, note", want);
        DriverChecks.exec(a, "ALTER TABLE " + plain + " ADD COLUMN note text");
        step("simple INSERT of the new column", () -> DriverChecks.exec(s, "INSERT INTO " + plain + " VALUES ('s', 'simple', 'n')"));
        step("extended INSERT of it", () -> insert(b, "INSERT INTO " + plain + " (k, v, note) VALUES (?, ?, ?)", "e", "ext", "n"));
        expectCopies(c, plain, "k, v, note", List.of("a|before|NULL", "s|simple|n", "e|ext|n"));
    }

    static void inTransaction(DriverChecks.Ctx c) throws Exception {
        Connection conn = c.connect();
        String keyed = table(c, conn, "tx_k");
        String plain = table(c, conn, "tx_p");
        conn.setAutoCommit(false);
        DriverChecks.exec(conn, "CREATE TABLE " + keyed + " (" + KEYED + ")");
        step("INSERT without a column list", () -> DriverChecks.exec(conn, "INSERT INTO " + keyed + " VALUES (1, 'v1')"));
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + keyed + " (id, val) VALUES (?, ?)")) {
            for (int i = 2; i < 9; i++) {
                ps.setLong(1, i);
                ps.setString(2, "v" + i);
                int n = i;
                step("extended INSERT " + n, ps::executeUpdate);
            }
        }
        StringBuilder text = new StringBuilder();
        for (int i = 9; i < 17; i++) {
            text.append(i).append("\tv").append(i).append('\n');
        }
        long n = copyIn(conn, "COPY " + keyed + " (id, val) FROM STDIN", text.toString());
        DriverChecks.expect(n == 8, "copyIn: " + n + " rows");
        DriverChecks.exec(conn, "CREATE TABLE " + plain + " (" + PLAIN + ")");
        step("INSERT into the table without id", () -> insert(conn, "INSERT INTO " + plain + " (k, v) VALUES (?, ?)", "a", "1"));
        DriverChecks.exec(conn, "ALTER TABLE " + keyed + " ADD COLUMN note text");
        step("INSERT of the new column", () -> insert(conn, "INSERT INTO " + keyed + " (id, val, note) VALUES (?, ?, ?)", 17L, "v17", "n"));
        conn.commit();
        conn.setAutoCommit(true);
        List<String> want = new ArrayList<>();
        for (int i = 1; i < 17; i++) {
            want.add(i + "|v" + i + "|NULL");
        }
        want.add("17|v17|n");
        expectSharded(c, conn, keyed, "id, val, note", want);
        expectCopies(c, plain, "k, v", List.of("a|1"));
    }

    /**
     * A table without id is omnisharded (every shard holds all its rows):
     * given id it would be sharded by it with every row still everywhere.
     */
    static void addKeyRefused(DriverChecks.Ctx c) throws Exception {
        Connection conn = c.connect();
        String plain = table(c, conn, "kr_p");
        DriverChecks.exec(conn, "CREATE TABLE " + plain + " (" + PLAIN + ")");
        DriverChecks.exec(conn, "INSERT INTO " + plain + " VALUES ('a', '1')");
        try (Statement st = conn.createStatement()) {
            st.execute("ALTER TABLE " + plain + " ADD COLUMN id bigint");
            throw new DriverChecks.CheckFailed("adding the key column: want SQLSTATE 0A000, got no error");
        } catch (SQLException e) {
            DriverChecks.expect("0A000".equals(e.getSQLState()), "adding the key column: want SQLSTATE 0A000, got " + DriverChecks.describe(e));
            String msg = String.valueOf(e.getMessage());
            DriverChecks.expect(msg.contains("omnisharded") && msg.contains(plain), "the refusal does not say why: " + DriverChecks.describe(e));
        }
        step("INSERT after the refusal", () -> insert(conn, "INSERT INTO " + plain + " (k, v) VALUES (?, ?)", "b", "2"));
        expectCopies(c, plain, "k, v", List.of("a|1", "b|2"));
    }
}
