// Driver checks for pgx v5 against pgshard: mode columns (two shards, only a
// column-only `[[sharded_tables]]` entry on `id`, no table). The
// application's own tables are created and written at once, by the
// connection that created them and by another one connected before: a
// table with id (sharded by it) and one without (a copy on every shard),
// INSERTs in the simple protocol and in every extended exec mode, CopyFrom
// (binary, after pgx's own describe of the table), inside a transaction
// too; ALTER TABLE ADD COLUMN followed at once by writes of the new column;
// adding the key column to a table without it refused. Where the rows
// landed is read from each shard directly.
package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

func columnsChecks() []check {
	const s = time.Second
	columns := []string{"columns"}
	return []check{
		{"columns_create_insert", columns, 20 * s, checkColumnsCreateInsert},
		{"columns_create_copy", columns, 20 * s, checkColumnsCreateCopy},
		{"columns_add_column", columns, 20 * s, checkColumnsAddColumn},
		{"columns_in_transaction", columns, 20 * s, checkColumnsInTransaction},
		{"columns_add_key_refused", columns, 20 * s, checkColumnsAddKeyRefused},
	}
}

const (
	keyedColumns = "id bigint PRIMARY KEY, val text"
	plainColumns = "k text PRIMARY KEY, v text"
)

// row is a row as text (NULL as "NULL"), for comparing rows of any table.
type row []string

func (r row) String() string { return strings.Join(r, "|") }

func sortRows(rows []row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.String()
	}
	sort.Strings(out)
	return out
}

// textRows reads every row of sql as text.
func textRows(t *T, conn *pgx.Conn, sql string, args ...any) ([]row, error) {
	rs, err := conn.Query(t.ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		values, err := rs.Values()
		if err != nil {
			return nil, err
		}
		r := make(row, len(values))
		for i, v := range values {
			if v == nil {
				r[i] = "NULL"
			} else {
				r[i] = fmt.Sprint(v)
			}
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// perShard reads sql's rows on each shard directly.
func perShard(t *T, sql string) ([][]row, error) {
	var out [][]row
	for i, port := range t.env.shardPorts {
		direct := *t.env
		direct.port = port
		conn, err := pgx.Connect(t.ctx, direct.connString(t.env.user, t.env.password, fmt.Sprintf("shard_%d", i)))
		if err != nil {
			return nil, fmt.Errorf("connect to shard %d: %w", i, err)
		}
		rows, err := textRows(t, conn, sql)
		closeConn(conn)
		if err != nil {
			return nil, fmt.Errorf("%s on shard %d: %s", sql, i, describe(err))
		}
		out = append(out, rows)
	}
	return out, nil
}

// expectSharded: want (rows whose first value is id) is table sharded by
// id: each row on exactly one shard, every shard holding some, and pgshard
// reading each by its key from where it is.
func expectSharded(t *T, conn *pgx.Conn, table, columns string, want []row) error {
	shards, err := perShard(t, "SELECT "+columns+" FROM "+table)
	if err != nil {
		return err
	}
	var all []row
	var counts []int
	for _, rows := range shards {
		all = append(all, rows...)
		counts = append(counts, len(rows))
	}
	if got, w := sortRows(all), sortRows(want); strings.Join(got, ",") != strings.Join(w, ",") {
		return fmt.Errorf("%s: the shards' rows together are %v, want %v", table, got, w)
	}
	for _, n := range counts {
		if n == 0 {
			return fmt.Errorf("%s: a shard holds none of the %d rows: %v", table, len(want), counts)
		}
	}
	for _, r := range want {
		got, err := textRows(t, conn, "SELECT "+columns+" FROM "+table+" WHERE id = $1", r[0])
		if err != nil {
			return fmt.Errorf("%s: read id %s: %s", table, r[0], describe(err))
		}
		if len(got) != 1 || got[0].String() != r.String() {
			return fmt.Errorf("%s: id %s read by key through pgshard: %v, want %v", table, r[0], got, r)
		}
	}
	return nil
}

// expectCopies: every shard holds all the rows want of table.
func expectCopies(t *T, table, columns string, want []row) error {
	shards, err := perShard(t, "SELECT "+columns+" FROM "+table)
	if err != nil {
		return err
	}
	for i, rows := range shards {
		if got, w := sortRows(rows), sortRows(want); strings.Join(got, ",") != strings.Join(w, ",") {
			return fmt.Errorf("%s: rows on shard %d are %v, want %v", table, i, got, w)
		}
	}
	return nil
}

func keyedRows(from, to int, note bool) []row {
	var out []row
	for i := from; i < to; i++ {
		r := row{fmt.Sprint(i), fmt.Sprintf("v%d", i)}
		if note {
			r = append(r, fmt.Sprintf("n%d", i))
		}
		out = append(out, r)
	}
	return out
}

// columnsSetup: two connections (the second connected before any DDL) and
// this check's two table names, dropped before and after.
func columnsSetup(t *T, name string) (a, b *pgx.Conn, keyed, plain string, err error) {
	if a, err = t.connect(); err != nil {
		return
	}
	if b, err = t.connect(); err != nil {
		return
	}
	keyed, plain = "drv_pgx_"+name+"_k", "drv_pgx_"+name+"_p"
	for _, table := range []string{keyed, plain} {
		if _, err = a.Exec(t.ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			return
		}
		drop := "DROP TABLE IF EXISTS " + table
		t.defer_(func() { t.cleanupExec(drop) })
	}
	return
}

// exec runs sql, naming what failed.
func exec(t *T, conn *pgx.Conn, what, sql string, args ...any) error {
	if _, err := conn.Exec(t.ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %s", what, describe(err))
	}
	return nil
}

func copyRows(rows []row) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		values := make([]any, len(r))
		for j, v := range r {
			values[j] = v
		}
		out[i] = values
	}
	return out
}

func checkColumnsCreateInsert(t *T) error {
	a, b, keyed, plain, err := columnsSetup(t, "ci")
	if err != nil {
		return err
	}
	if err := exec(t, a, "create", "CREATE TABLE "+keyed+" ("+keyedColumns+")"); err != nil {
		return err
	}
	if err := exec(t, b, "simple INSERT without a column list", "INSERT INTO "+keyed+" VALUES (1, 'v1')"); err != nil {
		return err
	}
	// Every exec mode, the simple protocol with parameters included.
	for i := 2; i < 17; i++ {
		m := allModes[i%len(allModes)]
		sql := "INSERT INTO " + keyed + " (id, val) VALUES ($1, $2)"
		if i%2 == 0 {
			sql = "INSERT INTO " + keyed + " VALUES ($1, $2)"
		}
		if err := exec(t, b, fmt.Sprintf("INSERT %d with %v", i, m), sql, m, int64(i), fmt.Sprintf("v%d", i)); err != nil {
			return err
		}
	}
	if err := expectSharded(t, a, keyed, "id, val", keyedRows(1, 17, false)); err != nil {
		return err
	}
	if err := exec(t, a, "create", "CREATE TABLE "+plain+" ("+plainColumns+")"); err != nil {
		return err
	}
	if err := exec(t, b, "simple INSERT into the table without id", "INSERT INTO "+plain+" VALUES ('s', 'simple')"); err != nil {
		return err
	}
	if err := exec(t, b, "INSERT into it", "INSERT INTO "+plain+" (k, v) VALUES ($1, $2)", "e", "extended"); err != nil {
		return err
	}
	return expectCopies(t, plain, "k, v", []row{{"s", "simple"}, {"e", "extended"}})
}

func checkColumnsCreateCopy(t *T) error {
	a, _, keyed, plain, err := columnsSetup(t, "cc")
	if err != nil {
		return err
	}
	if err := exec(t, a, "create", "CREATE TABLE "+keyed+" ("+keyedColumns+")"); err != nil {
		return err
	}
	rows := keyedRows(1, 41, false)
	var copied [][]any
	for i := 1; i < 41; i++ {
		copied = append(copied, []any{int64(i), fmt.Sprintf("v%d", i)})
	}
	n, err := a.CopyFrom(t.ctx, pgx.Identifier{keyed}, []string{"id", "val"}, pgx.CopyFromRows(copied))
	if err != nil || n != int64(len(rows)) {
		return fmt.Errorf("CopyFrom: %d rows, %s", n, describe(err))
	}
	if err := expectSharded(t, a, keyed, "id, val", rows); err != nil {
		return err
	}
	if err := exec(t, a, "create", "CREATE TABLE "+plain+" ("+plainColumns+")"); err != nil {
		return err
	}
	plainRows := []row{{"k0", "v0"}, {"k1", "v1"}, {"k2", "v2"}}
	n, err = a.CopyFrom(t.ctx, pgx.Identifier{plain}, []string{"k", "v"}, pgx.CopyFromRows(copyRows(plainRows)))
	if err != nil || n != 3 {
		return fmt.Errorf("CopyFrom into the table without id: %d rows, %s", n, describe(err))
	}
	return expectCopies(t, plain, "k, v", plainRows)
}

func checkColumnsAddColumn(t *T) error {
	a, b, keyed, plain, err := columnsSetup(t, "ac")
	if err != nil {
		return err
	}
	steps := []struct {
		conn      *pgx.Conn
		what, sql string
		args      []any
	}{
		{a, "create", "CREATE TABLE " + keyed + " (" + keyedColumns + ")", nil},
		{a, "create", "CREATE TABLE " + plain + " (" + plainColumns + ")", nil},
		{b, "INSERT before", "INSERT INTO " + keyed + " (id, val) VALUES ($1, $2)", []any{int64(1), "v1"}},
		{b, "INSERT before", "INSERT INTO " + plain + " (k, v) VALUES ($1, $2)", []any{"a", "before"}},
		{a, "add column", "ALTER TABLE " + keyed + " ADD COLUMN note text", nil},
		{b, "simple INSERT of the new column", "INSERT INTO " + keyed + " (id, val, note) VALUES (2, 'v2', 'n2')", nil},
		{b, "simple INSERT without a column list", "INSERT INTO " + keyed + " VALUES (3, 'v3', 'n3')", nil},
	}
	for _, s := range steps {
		if err := exec(t, s.conn, s.what, s.sql, s.args...); err != nil {
			return err
		}
	}
	for i := 4; i < 10; i++ {
		m := allModes[i%len(allModes)]
		sql := "INSERT INTO " + keyed + " (id, val, note) VALUES ($1, $2, $3)"
		if i == 9 {
			sql = "INSERT INTO " + keyed + " VALUES ($1, $2, $3)"
		}
		if err := exec(t, b, fmt.Sprintf("INSERT %d with %v", i, m), sql, m, int64(i), fmt.Sprintf("v%d", i), fmt.Sprintf("n%d", i)); err != nil {
			return err
		}
	}
	var copied [][]any
	for i := 10; i < 17; i++ {
		copied = append(copied, []any{int64(i), fmt.Sprintf("v%d", i), fmt.Sprintf("n%d", i)})
	}
	n, err := b.CopyFrom(t.ctx, pgx.Identifier{keyed}, []string{"id", "val", "note"}, pgx.CopyFromRows(copied))
	if err != nil || n != int64(len(copied)) {
		return fmt.Errorf("CopyFrom of the new column: %d rows, %s", n, describe(err))
	}
	want := append([]row{{"1", "v1", "NULL"}}, keyedRows(2, 17, true)...)
	if err := expectSharded(t, a, keyed, "id, val, note", want); err != nil {
		return err
	}
	if err := exec(t, a, "add column", "ALTER TABLE "+plain+" ADD COLUMN note text"); err != nil {
		return err
	}
	if err := exec(t, b, "simple INSERT of the new column", "INSERT INTO "+plain+" VALUES ('s', 'simple', 'n')"); err != nil {
		return err
	}
	if err := exec(t, b, "INSERT of it", "INSERT INTO "+plain+" (k, v, note) VALUES ($1, $2, $3)", "e", "ext", "n"); err != nil {
		return err
	}
	return expectCopies(t, plain, "k, v, note", []row{{"a", "before", "NULL"}, {"s", "simple", "n"}, {"e", "ext", "n"}})
}

func checkColumnsInTransaction(t *T) error {
	c, _, keyed, plain, err := columnsSetup(t, "tx")
	if err != nil {
		return err
	}
	tx, err := c.Begin(t.ctx)
	if err != nil {
		return fmt.Errorf("begin: %s", describe(err))
	}
	defer tx.Rollback(t.ctx)
	run := func(what, sql string, args ...any) error {
		if _, err := tx.Exec(t.ctx, sql, args...); err != nil {
			return fmt.Errorf("%s: %s", what, describe(err))
		}
		return nil
	}
	if err := run("create", "CREATE TABLE "+keyed+" ("+keyedColumns+")"); err != nil {
		return err
	}
	if err := run("simple INSERT", "INSERT INTO "+keyed+" VALUES (1, 'v1')"); err != nil {
		return err
	}
	for i := 2; i < 9; i++ {
		m := allModes[i%len(allModes)]
		if err := run(fmt.Sprintf("INSERT %d with %v", i, m), "INSERT INTO "+keyed+" (id, val) VALUES ($1, $2)", m, int64(i), fmt.Sprintf("v%d", i)); err != nil {
			return err
		}
	}
	var copied [][]any
	for i := 9; i < 17; i++ {
		copied = append(copied, []any{int64(i), fmt.Sprintf("v%d", i)})
	}
	n, err := tx.CopyFrom(t.ctx, pgx.Identifier{keyed}, []string{"id", "val"}, pgx.CopyFromRows(copied))
	if err != nil || n != int64(len(copied)) {
		return fmt.Errorf("CopyFrom: %d rows, %s", n, describe(err))
	}
	if err := run("create", "CREATE TABLE "+plain+" ("+plainColumns+")"); err != nil {
		return err
	}
	if err := run("INSERT into the table without id", "INSERT INTO "+plain+" (k, v) VALUES ($1, $2)", "a", "1"); err != nil {
		return err
	}
	if err := run("add column", "ALTER TABLE "+keyed+" ADD COLUMN note text"); err != nil {
		return err
	}
	if err := run("INSERT of the new column", "INSERT INTO "+keyed+" (id, val, note) VALUES ($1, $2, $3)", int64(17), "v17", "n"); err != nil {
		return err
	}
	if err := tx.Commit(t.ctx); err != nil {
		return fmt.Errorf("commit: %s", describe(err))
	}
	var want []row
	for i := 1; i < 17; i++ {
		want = append(want, row{fmt.Sprint(i), fmt.Sprintf("v%d", i), "NULL"})
	}
	want = append(want, row{"17", "v17", "n"})
	if err := expectSharded(t, c, keyed, "id, val, note", want); err != nil {
		return err
	}
	return expectCopies(t, plain, "k, v", []row{{"a", "1"}})
}

// A table without id is omnisharded (every shard holds all its rows): given
// id it would be sharded by it with every row still everywhere.
func checkColumnsAddKeyRefused(t *T) error {
	c, _, _, plain, err := columnsSetup(t, "kr")
	if err != nil {
		return err
	}
	if err := exec(t, c, "create", "CREATE TABLE "+plain+" ("+plainColumns+")"); err != nil {
		return err
	}
	if err := exec(t, c, "INSERT", "INSERT INTO "+plain+" VALUES ('a', '1')"); err != nil {
		return err
	}
	_, err = c.Exec(t.ctx, "ALTER TABLE "+plain+" ADD COLUMN id bigint")
	if err := wantState("adding the key column", err, "0A000"); err != nil {
		return err
	}
	if msg := describe(err); !strings.Contains(msg, "omnisharded") || !strings.Contains(msg, plain) {
		return fmt.Errorf("the refusal does not say why: %s", msg)
	}
	if err := exec(t, c, "INSERT after the refusal", "INSERT INTO "+plain+" (k, v) VALUES ($1, $2)", "b", "2"); err != nil {
		return err
	}
	return expectCopies(t, plain, "k, v", []row{{"a", "1"}, {"b", "2"}})
}
