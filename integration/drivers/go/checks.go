// Driver checks for pgx v5 against pgshard: the checks.
//
// Each check exercises what pgx really does on the wire: its default
// QueryExecModeCacheStatement (named statements `stmt_<hash>`, Parse+Describe
// first, binary formats), the other exec modes, SendBatch pipelines,
// CopyFrom (binary COPY) and PgConn.CopyTo, context cancellation through
// CancelRequest, nested transactions (savepoints), LISTEN/NOTIFY, pgxpool
// over a small server pool, and the admin console over the simple protocol.
// Every check expects what pgx gets from Postgres directly; the few
// sharded-mode adaptations (keyed statements on drv_items, no keyless INSERT
// into unsharded tables) are noted where they are made.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

func checks() []check {
	const s = time.Second
	return []check{
		{"basic", nil, 10 * s, checkBasic},
		{"keyed_roundtrip_exec_modes", nil, 15 * s, checkKeyedRoundtrip},
		{"binary_types", nil, 10 * s, checkBinaryTypes},
		{"prepared_across_ddl", nil, 15 * s, checkPreparedAcrossDDL},
		{"describe_errors", nil, 10 * s, checkDescribeErrors},
		{"large_param_count", nil, 20 * s, checkLargeParamCount},
		{"batch_error_mid_pipeline", nil, 10 * s, checkBatchError},
		{"batch_fanout", nil, 8 * s, checkBatchFanout},
		{"cursor_fetch", nil, 10 * s, checkCursorFetch},
		{"copy", nil, 15 * s, checkCopy},
		{"tx_error_aborts", nil, 10 * s, checkTxErrorAborts},
		{"savepoints", nil, 10 * s, checkSavepoints},
		{"listen_notify", []string{"session", "transaction", "sharded"}, 10 * s, checkListenNotify},
		{"cancel", nil, 20 * s, checkCancel},
		{"pool_concurrency", nil, 40 * s, checkPoolConcurrency},
		{"fanout_error_recovery", nil, 10 * s, checkFanoutErrorRecovery},
		{"admin_show_pools", nil, 10 * s, checkAdmin},
	}
}

var allModes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement,
	pgx.QueryExecModeCacheDescribe,
	pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec,
	pgx.QueryExecModeSimpleProtocol,
}

// basic: connect, a parametrised query, startup parameters, ReadyForQuery status.
func checkBasic(t *T) error {
	conn, err := t.connect()
	if err != nil {
		return err
	}
	var n int64
	if err := conn.QueryRow(t.ctx, "SELECT $1::int8 + 1", int64(41)).Scan(&n); err != nil || n != 42 {
		return fmt.Errorf("SELECT $1::int8 + 1: got %d, %s", n, describe(err))
	}
	if v := conn.PgConn().ParameterStatus("server_version"); v == "" {
		return errors.New("no server_version ParameterStatus")
	}
	if st := conn.PgConn().TxStatus(); st != 'I' {
		return fmt.Errorf("ReadyForQuery status %q after autocommit query, want 'I'", st)
	}
	tx, err := conn.Begin(t.ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(t.ctx)
	if st := conn.PgConn().TxStatus(); st != 'T' {
		return fmt.Errorf("ReadyForQuery status %q after BEGIN, want 'T'", st)
	}
	return tx.Commit(t.ctx)
}

// keyed_roundtrip_exec_modes: drv_items rows written with each exec mode
// (binary int8 key in the cached/describe modes, text in Exec and the simple
// protocol) and read back by key with every mode; on sharded clusters each
// write must reach the shard that owns the key (the others reject the row).
func checkKeyedRoundtrip(t *T) error {
	// One connection, the mode given per query (pgx takes a QueryExecMode as
	// the first argument): a session-mode cluster has only PGSHARD_POOL_SIZE
	// server connections for all clients.
	conn, err := t.connect()
	if err != nil {
		return err
	}
	var ids []int64
	for i := 0; i < 20; i++ {
		ids = append(ids, t.id(i))
	}
	if err := t.ownRows(conn, ids...); err != nil {
		return err
	}
	for i, id := range ids {
		m := allModes[i%len(allModes)]
		if _, err := conn.Exec(t.ctx, "INSERT INTO drv_items (id, val) VALUES ($1, $2)", m, id, fmt.Sprintf("v%d", i)); err != nil {
			return fmt.Errorf("insert id %d with %v: %s", id, m, describe(err))
		}
	}
	for _, m := range allModes {
		for i, id := range ids {
			var val string
			if err := conn.QueryRow(t.ctx, "SELECT val FROM drv_items WHERE id = $1", m, id).Scan(&val); err != nil {
				return fmt.Errorf("select id %d with %v: %s", id, m, describe(err))
			}
			if val != fmt.Sprintf("v%d", i) {
				return fmt.Errorf("select id %d with %v: got %q", id, m, val)
			}
		}
	}
	return nil
}

// binary_types: values of several types round-trip through binary
// parameters and results (the default mode) and text (simple protocol).
func checkBinaryTypes(t *T) error {
	ts := time.Date(2024, 2, 29, 12, 34, 56, 789000000, time.UTC)
	uuid := pgtype.UUID{Bytes: [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}, Valid: true}
	num := pgtype.Numeric{Int: big.NewInt(1234567890123), Exp: -4, Valid: true}
	args := []any{num, ts, uuid, `{"k": "v"}`, []int32{1, 2, 3}, []byte{0, 1, 255}, 2.5, true, "héllo"}
	for _, m := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		conn, err := t.connect(withMode(m))
		if err != nil {
			return err
		}
		var (
			gNum   pgtype.Numeric
			gTs    time.Time
			gUUID  pgtype.UUID
			gJSON  map[string]any
			gArr   []int32
			gBytes []byte
			gF     float64
			gB     bool
			gS     string
		)
		err = conn.QueryRow(t.ctx, "SELECT $1::numeric, $2::timestamptz, $3::uuid, $4::jsonb, $5::int4[], $6::bytea, $7::float8, $8::bool, $9::text", args...).
			Scan(&gNum, &gTs, &gUUID, &gJSON, &gArr, &gBytes, &gF, &gB, &gS)
		if err != nil {
			return fmt.Errorf("%v: %s", m, describe(err))
		}
		numStr, _ := gNum.Value()
		if numStr != "123456789.0123" || !gTs.Equal(ts) || gUUID != uuid || gJSON["k"] != "v" ||
			!reflect.DeepEqual(gArr, []int32{1, 2, 3}) || !bytes.Equal(gBytes, []byte{0, 1, 255}) ||
			gF != 2.5 || !gB || gS != "héllo" {
			return fmt.Errorf("%v: values changed: %v %v %x %v %v %x %v %v %q", m, numStr, gTs, gUUID, gJSON, gArr, gBytes, gF, gB, gS)
		}
	}
	return nil
}

// prepared_across_ddl: the same parametrised query before and after
// `DROP TABLE; CREATE TABLE` changes its result column from int4 to text.
// Directly, pgx's cached statement on the connection that prepared it gets
// at most one 0A000 "cached plan must not change result type" (pgx then
// forgets the statement and prepares it again); a DescribeExec connection
// (unnamed statements) and a fresh connection never see an error, and all
// see the new column type.
func checkPreparedAcrossDDL(t *T) error {
	a, err := t.connect()
	if err != nil {
		return err
	}
	d, err := t.connect(withMode(pgx.QueryExecModeDescribeExec))
	if err != nil {
		return err
	}
	if err := t.scratchTable(a, "drv_pgx_ddl", "id bigint PRIMARY KEY, x int"); err != nil {
		return err
	}
	// On a sharded cluster a keyless INSERT into an unsharded table is
	// refused, so the table stays empty there and only the types are checked.
	if !t.sharded() {
		if _, err := a.Exec(t.ctx, "INSERT INTO drv_pgx_ddl VALUES (1, 42)"); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
	}
	const q = "SELECT x FROM drv_pgx_ddl WHERE id = $1"
	expect := func(who string, conn *pgx.Conn, oid uint32, val any) error {
		rows, err := conn.Query(t.ctx, q, int64(1))
		if err != nil {
			return err
		}
		var got []any
		for rows.Next() {
			v, _ := rows.Values()
			got = append(got, v[0])
		}
		fds := rows.FieldDescriptions()
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(fds) != 1 || fds[0].DataTypeOID != oid {
			return fmt.Errorf("%s: result column type %v, want OID %d", who, fds, oid)
		}
		if t.sharded() {
			if len(got) != 0 {
				return fmt.Errorf("%s: rows %v from an empty table", who, got)
			}
		} else if len(got) != 1 || got[0] != val {
			return fmt.Errorf("%s: rows %v, want [%v]", who, got, val)
		}
		return nil
	}
	for i := 0; i < 3; i++ {
		for who, conn := range map[string]*pgx.Conn{"cached-statement conn": a, "describe-exec conn": d} {
			if err := expect(who, conn, 23, int32(42)); err != nil {
				return fmt.Errorf("before DDL, %s", describe(err))
			}
		}
	}
	for _, sql := range []string{"DROP TABLE drv_pgx_ddl", "CREATE TABLE drv_pgx_ddl (id bigint PRIMARY KEY, x text)"} {
		if _, err := a.Exec(t.ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	if !t.sharded() {
		if _, err := a.Exec(t.ctx, "INSERT INTO drv_pgx_ddl VALUES (1, 'a')"); err != nil {
			return fmt.Errorf("insert after DDL: %w", err)
		}
	}
	var problems []string
	// Fresh connection first: it never prepared the statement itself.
	b, err := t.connect()
	if err != nil {
		return err
	}
	if err := expect("after DDL, fresh conn", b, 25, "a"); err != nil {
		problems = append(problems, "after DDL, fresh conn: "+describe(err))
	}
	if err := expect("after DDL, describe-exec conn", d, 25, "a"); err != nil {
		problems = append(problems, "after DDL, describe-exec conn: "+describe(err))
	}
	for try := 1; try <= 3; try++ {
		err := expect("after DDL, cached-statement conn", a, 25, "a")
		if err == nil {
			continue
		}
		if try == 1 && isCachedPlanError(err) {
			continue // what Postgres answers too; pgx invalidates its statement
		}
		problems = append(problems, fmt.Sprintf("after DDL, cached-statement conn, try %d: %s", try, describe(err)))
		break
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// describe_errors: statements that fail at execution or at parse analysis
// fail the same way every time (pgx forgets a failed statement and prepares
// it again under the same name), and good queries work afterwards.
func checkDescribeErrors(t *T) error {
	for _, connName := range []string{"first conn", "second conn"} {
		conn, err := t.connect()
		if err != nil {
			return err
		}
		cases := []struct {
			sql   string
			args  []any
			state string
		}{
			{"select 1/0", nil, "22012"},
			{"SELECT 1/$1::int", []any{0}, "22012"},
			{"select * from no_such_table", nil, "42P01"},
			{"SELECT * FROM no_such_table WHERE x = $1", []any{1}, "42P01"},
		}
		for _, c := range cases {
			for i := 1; i <= 3; i++ {
				var v any
				err := conn.QueryRow(t.ctx, c.sql, c.args...).Scan(&v)
				if err := wantState(fmt.Sprintf("%s: %q try %d", connName, c.sql, i), err, c.state); err != nil {
					return err
				}
			}
		}
		var n int32
		if err := conn.QueryRow(t.ctx, "SELECT $1::int + 1", 1).Scan(&n); err != nil || n != 2 {
			return fmt.Errorf("%s: good query afterwards: %d, %s", connName, n, describe(err))
		}
	}
	return nil
}

// large_param_count: 32768 and 65535 (the protocol's maximum) parameters.
func checkLargeParamCount(t *T) error {
	conn, err := t.connect()
	if err != nil {
		return err
	}
	for _, n := range []int{32767, 32768, 65535} {
		var sb strings.Builder
		sb.WriteString("SELECT cardinality(ARRAY[")
		args := make([]any, n)
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "$%d::int", i+1)
			args[i] = int32(i)
		}
		sb.WriteString("])")
		var got int32
		if err := conn.QueryRow(t.ctx, sb.String(), args...).Scan(&got); err != nil || int(got) != n {
			return fmt.Errorf("%d parameters: got %d, %s", n, got, describe(err))
		}
	}
	return nil
}

// batch_error_mid_pipeline: SendBatch of 20 keyed statements on one row with
// a failing one in the middle. pgx sends them all with one Sync, so as in
// Postgres they form one implicit transaction: the statements after the
// failure are skipped, the updates before it are rolled back, and the
// connection works afterwards.
func checkBatchError(t *T) error {
	conn, err := t.connect()
	if err != nil {
		return err
	}
	id := t.id(0)
	if err := t.ownRows(conn, id); err != nil {
		return err
	}
	if _, err := conn.Exec(t.ctx, "INSERT INTO drv_items (id, val) VALUES ($1, 'orig')", id); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	b := &pgx.Batch{}
	for i := 0; i < 20; i++ {
		if i == 9 {
			b.Queue("SELECT val FROM drv_items WHERE id = $1 AND 1/$2::int = 1", id, 0)
		} else {
			b.Queue("UPDATE drv_items SET val = $2 WHERE id = $1", id, fmt.Sprintf("b%d", i))
		}
	}
	br := conn.SendBatch(t.ctx, b)
	var problems []string
	for i := 0; i < 20; i++ {
		_, err := br.Exec()
		switch {
		case i < 9 && err != nil:
			problems = append(problems, fmt.Sprintf("statement %d: %s", i, describe(err)))
		case i == 9 && sqlState(err) != "22012":
			problems = append(problems, fmt.Sprintf("statement 9: want 22012, got %s", describe(err)))
		case i > 9 && err == nil:
			problems = append(problems, fmt.Sprintf("statement %d after the failure succeeded", i))
		}
	}
	if err := br.Close(); err != nil && sqlState(err) != "22012" {
		problems = append(problems, "batch close: "+describe(err))
	}
	var val string
	if err := conn.QueryRow(t.ctx, "SELECT val FROM drv_items WHERE id = $1", id).Scan(&val); err != nil {
		problems = append(problems, "after batch: "+describe(err))
	} else if val != "orig" {
		problems = append(problems, fmt.Sprintf("after batch val = %q, want 'orig' (implicit transaction not rolled back)", val))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// batch_fanout: pipelined statements that a sharded cluster sends to every
// shard (DDL, a keyless read) in one SendBatch, i.e.
// Parse+Describe+Sync then Bind+Execute+Sync; on a hang the deadline fails it.
func checkBatchFanout(t *T) error {
	conn, err := t.connect()
	if err != nil {
		return err
	}
	t.cleanupExec("DROP TABLE IF EXISTS drv_pgx_pipe")
	t.defer_(func() { t.cleanupExec("DROP TABLE IF EXISTS drv_pgx_pipe") })
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	b := &pgx.Batch{}
	b.Queue("CREATE TABLE IF NOT EXISTS drv_pgx_pipe (a int)")
	b.Queue("SELECT id FROM drv_items WHERE val = $1", "drv_pgx_no_such_val")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("batch of DDL and a keyless read: %s", describe(err))
	}
	b = &pgx.Batch{}
	b.Queue("SELECT a FROM drv_pgx_pipe WHERE a = $1", 1)
	for i := 0; i < 3; i++ {
		b.Queue("SELECT id FROM drv_items WHERE val = $1", fmt.Sprintf("drv_pgx_no_such_val_%d", i))
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("batch of keyless reads: %s", describe(err))
	}
	var n int32
	if err := conn.QueryRow(ctx, "SELECT $1::int", 7).Scan(&n); err != nil || n != 7 {
		return fmt.Errorf("query after the batches: %d, %s", n, describe(err))
	}
	return nil
}

// cursor_fetch: DECLARE CURSOR / FETCH 100 in a transaction returns all 1000
// rows. On a sharded cluster a keyed statement comes first so that the
// transaction has its shard (pgshard opens it there).
func checkCursorFetch(t *T) error {
	conn, err := t.connect()
	if err != nil {
		return err
	}
	tx, err := conn.Begin(t.ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(t.ctx)
	if t.sharded() {
		var v string
		if err := tx.QueryRow(t.ctx, "SELECT val FROM drv_items WHERE id = $1", t.id(0)).Scan(&v); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("keyed select: %s", describe(err))
		}
	}
	if _, err := tx.Exec(t.ctx, "DECLARE drv_pgx_cur CURSOR FOR SELECT g FROM generate_series(1, 1000) g"); err != nil {
		return fmt.Errorf("declare: %s", describe(err))
	}
	count, sum := 0, 0
	for fetches := 0; ; fetches++ {
		if fetches > 20 {
			return errors.New("FETCH never returned zero rows")
		}
		rows, err := tx.Query(t.ctx, "FETCH 100 FROM drv_pgx_cur")
		if err != nil {
			return fmt.Errorf("fetch: %s", describe(err))
		}
		n := 0
		for rows.Next() {
			var g int32
			if err := rows.Scan(&g); err != nil {
				rows.Close()
				return err
			}
			n++
			sum += int(g)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("fetch: %s", describe(err))
		}
		if n == 0 {
			break
		}
		count += n
	}
	if count != 1000 || sum != 500500 {
		return fmt.Errorf("fetched %d rows summing to %d, want 1000 and 500500", count, sum)
	}
	if _, err := tx.Exec(t.ctx, "CLOSE drv_pgx_cur"); err != nil {
		return fmt.Errorf("close: %s", describe(err))
	}
	return tx.Commit(t.ctx)
}

// copy: binary CopyFrom and COPY ... TO STDOUT. Unsharded: a full round trip
// through a scratch table. Sharded: COPY TO STDOUT of a keyed query, and
// CopyFrom into drv_items either works (rows readable by key) or is refused
// with an error, after which the connection still works.
func checkCopy(t *T) error {
	conn, err := t.connect()
	if err != nil {
		return err
	}
	if t.sharded() {
		return checkCopySharded(t, conn)
	}
	if err := t.scratchTable(conn, "drv_pgx_copy", "a int, b text"); err != nil {
		return err
	}
	rows := make([][]any, 1000)
	for i := range rows {
		rows[i] = []any{int32(i), fmt.Sprintf("row\t%d", i)}
	}
	n, err := conn.CopyFrom(t.ctx, pgx.Identifier{"drv_pgx_copy"}, []string{"a", "b"}, pgx.CopyFromRows(rows))
	if err != nil || n != 1000 {
		return fmt.Errorf("CopyFrom: %d rows, %s", n, describe(err))
	}
	var buf bytes.Buffer
	tag, err := conn.PgConn().CopyTo(t.ctx, &buf, "COPY (SELECT a, b FROM drv_pgx_copy ORDER BY a) TO STDOUT")
	if err != nil || tag.RowsAffected() != 1000 {
		return fmt.Errorf("CopyTo: %v, %s", tag, describe(err))
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1000 || lines[7] != `7	row\t7` {
		return fmt.Errorf("CopyTo: %d lines, line 7 %q", len(lines), lines[min(7, len(lines)-1)])
	}
	var total int64
	if err := conn.QueryRow(t.ctx, "SELECT sum(a) FROM drv_pgx_copy WHERE b LIKE $1", "row%").Scan(&total); err != nil || total != 499500 {
		return fmt.Errorf("after copy: sum %d, %s", total, describe(err))
	}
	return nil
}

func checkCopySharded(t *T, conn *pgx.Conn) error {
	var ids []int64
	for i := 0; i < 11; i++ {
		ids = append(ids, t.id(i))
	}
	if err := t.ownRows(conn, ids...); err != nil {
		return err
	}
	if _, err := conn.Exec(t.ctx, "INSERT INTO drv_items (id, val) VALUES ($1, 'copy me')", ids[0]); err != nil {
		return fmt.Errorf("insert: %s", describe(err))
	}
	var buf bytes.Buffer
	sql := fmt.Sprintf("COPY (SELECT id, val FROM drv_items WHERE id = %d) TO STDOUT", ids[0])
	if _, err := conn.PgConn().CopyTo(t.ctx, &buf, sql); err != nil {
		return fmt.Errorf("keyed CopyTo: %s", describe(err))
	}
	if want := fmt.Sprintf("%d\tcopy me\n", ids[0]); buf.String() != want {
		return fmt.Errorf("keyed CopyTo: got %q, want %q", buf.String(), want)
	}
	var rows [][]any
	for _, id := range ids[1:] {
		rows = append(rows, []any{id, "copied"})
	}
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"drv_items"}, []string{"id", "val"}, pgx.CopyFromRows(rows))
	if err != nil {
		if sqlState(err) == "" {
			return fmt.Errorf("CopyFrom into drv_items not refused cleanly: %v", err)
		}
	} else {
		if n != int64(len(rows)) {
			return fmt.Errorf("CopyFrom into drv_items: %d rows, want %d", n, len(rows))
		}
		for _, id := range ids[1:] {
			var v string
			if err := conn.QueryRow(t.ctx, "SELECT val FROM drv_items WHERE id = $1", id).Scan(&v); err != nil || v != "copied" {
				return fmt.Errorf("row %d after CopyFrom: %q, %s", id, v, describe(err))
			}
		}
	}
	var v string
	if err := conn.QueryRow(t.ctx, "SELECT val FROM drv_items WHERE id = $1", ids[0]).Scan(&v); err != nil || v != "copy me" {
		return fmt.Errorf("keyed select after CopyFrom (which gave %s): %q, %s", describe(err), v, describe(err))
	}
	return nil
}

// tx_error_aborts: after an error in a transaction the next statement gets
// 25P02 until ROLLBACK, over the simple protocol, the extended protocol, and
// (the sharded case) after a keyed statement picked the shard.
func checkTxErrorAborts(t *T) error {
	conn, err := t.connect()
	if err != nil {
		return err
	}
	id := t.id(0)
	variants := []struct {
		name  string
		first func(tx pgx.Tx) error // nil: none
		fail  func(tx pgx.Tx) error
		next  func(tx pgx.Tx) error
	}{
		{
			"simple protocol", nil,
			func(tx pgx.Tx) error { _, err := tx.Exec(t.ctx, "SELECT 1/0"); return err },
			func(tx pgx.Tx) error { _, err := tx.Exec(t.ctx, "SELECT 1"); return err },
		},
		{
			"extended protocol", nil,
			func(tx pgx.Tx) error { var v int32; return tx.QueryRow(t.ctx, "SELECT 1/$1::int", 0).Scan(&v) },
			func(tx pgx.Tx) error { var v int32; return tx.QueryRow(t.ctx, "SELECT $1::int", 1).Scan(&v) },
		},
		{
			"after a keyed statement",
			func(tx pgx.Tx) error {
				_, err := tx.Exec(t.ctx, "SELECT val FROM drv_items WHERE id = $1", id)
				return err
			},
			func(tx pgx.Tx) error {
				_, err := tx.Exec(t.ctx, "SELECT val FROM drv_items WHERE id = $1 AND 1/$2::int = 1", id, 0)
				return err
			},
			func(tx pgx.Tx) error {
				_, err := tx.Exec(t.ctx, "SELECT val FROM drv_items WHERE id = $1", id)
				return err
			},
		},
	}
	for _, v := range variants {
		tx, err := conn.Begin(t.ctx)
		if err != nil {
			return fmt.Errorf("%s: begin: %w", v.name, err)
		}
		if v.first != nil {
			if err := v.first(tx); err != nil {
				tx.Rollback(t.ctx)
				return fmt.Errorf("%s: first statement: %s", v.name, describe(err))
			}
		}
		if err := wantState(v.name+": failing statement", v.fail(tx), "22012"); err != nil {
			tx.Rollback(t.ctx)
			return err
		}
		if err := wantState(v.name+": statement after the error", v.next(tx), "25P02"); err != nil {
			tx.Rollback(t.ctx)
			return err
		}
		if st := conn.PgConn().TxStatus(); st != 'E' {
			tx.Rollback(t.ctx)
			return fmt.Errorf("%s: ReadyForQuery status %q in a failed transaction, want 'E'", v.name, st)
		}
		if err := tx.Rollback(t.ctx); err != nil {
			return fmt.Errorf("%s: rollback: %s", v.name, describe(err))
		}
		var n int32
		if err := conn.QueryRow(t.ctx, "SELECT $1::int", 5).Scan(&n); err != nil || n != 5 {
			return fmt.Errorf("%s: after rollback: %d, %s", v.name, n, describe(err))
		}
	}
	return nil
}

// savepoints: pgx nested transactions (SAVEPOINT / ROLLBACK TO SAVEPOINT /
// RELEASE) with an error inside one, all on one drv_items row (so one shard).
func checkSavepoints(t *T) error {
	conn, err := t.connect()
	if err != nil {
		return err
	}
	id := t.id(0)
	if err := t.ownRows(conn, id); err != nil {
		return err
	}
	tx, err := conn.Begin(t.ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(t.ctx)
	set := func(q pgx.Tx, v string) error {
		_, err := q.Exec(t.ctx, "UPDATE drv_items SET val = $2 WHERE id = $1", id, v)
		return err
	}
	if _, err := tx.Exec(t.ctx, "INSERT INTO drv_items (id, val) VALUES ($1, 'v1')", id); err != nil {
		return fmt.Errorf("insert: %s", describe(err))
	}
	sp1, err := tx.Begin(t.ctx)
	if err != nil {
		return fmt.Errorf("savepoint 1: %s", describe(err))
	}
	if err := set(sp1, "v2"); err != nil {
		return fmt.Errorf("update in savepoint 1: %s", describe(err))
	}
	_, err = sp1.Exec(t.ctx, "SELECT val FROM drv_items WHERE id = $1 AND 1/$2::int = 1", id, 0)
	if err := wantState("error in savepoint 1", err, "22012"); err != nil {
		return err
	}
	if err := sp1.Rollback(t.ctx); err != nil {
		return fmt.Errorf("rollback to savepoint 1: %s", describe(err))
	}
	var v string
	if err := tx.QueryRow(t.ctx, "SELECT val FROM drv_items WHERE id = $1", id).Scan(&v); err != nil || v != "v1" {
		return fmt.Errorf("after rollback to savepoint: %q, %s", v, describe(err))
	}
	sp2, err := tx.Begin(t.ctx)
	if err != nil {
		return fmt.Errorf("savepoint 2: %s", describe(err))
	}
	if err := set(sp2, "v3"); err != nil {
		return fmt.Errorf("update in savepoint 2: %s", describe(err))
	}
	if err := sp2.Commit(t.ctx); err != nil {
		return fmt.Errorf("release savepoint 2: %s", describe(err))
	}
	if err := tx.Commit(t.ctx); err != nil {
		return fmt.Errorf("commit: %s", describe(err))
	}
	if err := conn.QueryRow(t.ctx, "SELECT val FROM drv_items WHERE id = $1", id).Scan(&v); err != nil || v != "v3" {
		return fmt.Errorf("after commit: %q, %s", v, describe(err))
	}
	return nil
}

// listen_notify (not in mode columns): a notification sent by one
// connection reaches another that LISTENs, through WaitForNotification; a
// NOTIFY rolled back is never sent, one committed is.
func checkListenNotify(t *T) error {
	listener, err := t.connect()
	if err != nil {
		return err
	}
	sender, err := t.connect()
	if err != nil {
		return err
	}
	if _, err := listener.Exec(t.ctx, "LISTEN drv_pgx_chan"); err != nil {
		return fmt.Errorf("listen: %s", describe(err))
	}
	for i, payload := range []string{"hello", "again"} {
		if _, err := sender.Exec(t.ctx, "SELECT pg_notify($1, $2)", "drv_pgx_chan", payload); err != nil {
			return fmt.Errorf("notify %d: %s", i, describe(err))
		}
		ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
		n, err := listener.WaitForNotification(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("notification %d: %s", i, describe(err))
		}
		if n.Channel != "drv_pgx_chan" || n.Payload != payload {
			return fmt.Errorf("notification %d: %q %q", i, n.Channel, n.Payload)
		}
	}
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		tx, err := sender.Begin(t.ctx)
		if err != nil {
			return fmt.Errorf("begin: %s", describe(err))
		}
		if _, err := tx.Exec(t.ctx, "SELECT pg_notify('drv_pgx_chan', $1)", end); err != nil {
			return fmt.Errorf("notify in transaction: %s", describe(err))
		}
		if end == "ROLLBACK" {
			err = tx.Rollback(t.ctx)
		} else {
			err = tx.Commit(t.ctx)
		}
		if err != nil {
			return fmt.Errorf("%s: %s", end, describe(err))
		}
	}
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	n, err := listener.WaitForNotification(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("notification after commit: %s", describe(err))
	}
	if n.Payload != "COMMIT" {
		return fmt.Errorf("notification after commit: %q (a rolled-back NOTIFY was sent)", n.Payload)
	}
	return nil
}

// cancel: a context deadline on `select pg_sleep(10)` makes pgx send a
// CancelRequest (configured with CancelRequestContextWatcherHandler, as
// applications that keep connections do), the query fails with 57014
// quickly, and the connection still works; the same with an explicit
// PgConn.CancelRequest from another goroutine.
func checkCancel(t *T) error {
	conn, err := t.connect(func(c *pgx.ConnConfig) {
		c.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 5 * time.Second}
		}
	})
	if err != nil {
		return err
	}
	works := func(what string) error {
		var n int32
		if err := conn.QueryRow(t.ctx, "SELECT $1::int", 3).Scan(&n); err != nil || n != 3 {
			return fmt.Errorf("%s: query afterwards: %d, %s", what, n, describe(err))
		}
		return nil
	}
	for i := 1; i <= 2; i++ {
		what := fmt.Sprintf("context deadline %d", i)
		ctx, cancel := context.WithTimeout(t.ctx, 500*time.Millisecond)
		start := time.Now()
		_, err := conn.Exec(ctx, "select pg_sleep(10)")
		cancel()
		if err := wantState(what, err, "57014"); err != nil {
			return err
		}
		if d := time.Since(start); d > 4*time.Second {
			return fmt.Errorf("%s: cancelled only after %s", what, d)
		}
		if err := works(what); err != nil {
			return err
		}
	}
	for i := 1; i <= 2; i++ {
		what := fmt.Sprintf("CancelRequest %d", i)
		go func() {
			time.Sleep(300 * time.Millisecond)
			ctx, cancel := context.WithTimeout(t.ctx, 3*time.Second)
			defer cancel()
			_ = conn.PgConn().CancelRequest(ctx)
		}()
		start := time.Now()
		_, err := conn.Exec(t.ctx, "select pg_sleep(10)")
		if err := wantState(what, err, "57014"); err != nil {
			return err
		}
		if d := time.Since(start); d > 4*time.Second {
			return fmt.Errorf("%s: cancelled only after %s", what, d)
		}
		if err := works(what); err != nil {
			return err
		}
	}
	return nil
}

// pool_concurrency: pgxpool with 32 connections (on a session-mode cluster
// no more than the server pool: each client holds a server) runs 200 short
// keyed transactions at once over 4 server connections; all succeed.
func checkPoolConcurrency(t *T) error {
	cfg, err := pgxpool.ParseConfig(t.env.connString(t.env.user, t.env.password, t.env.database))
	if err != nil {
		return err
	}
	cfg.MaxConns = 32
	if t.env.mode == "session" {
		cfg.MaxConns = int32(t.env.poolSize)
	}
	pool, err := pgxpool.NewWithConfig(t.ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	const n = 200
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = t.id(i)
	}
	forAll := func(f func(ctx context.Context, id int64) error) []error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f(t.ctx, id)
			}()
		}
		wg.Wait()
		return errs
	}
	summarize := func(what string, errs []error) error {
		failed, first := 0, error(nil)
		for _, e := range errs {
			if e != nil {
				failed++
				if first == nil {
					first = e
				}
			}
		}
		if failed > 0 {
			return fmt.Errorf("%s: %d of %d failed, first: %s", what, failed, n, describe(first))
		}
		return nil
	}
	del := func(ctx context.Context, id int64) error {
		_, err := pool.Exec(ctx, "DELETE FROM drv_items WHERE id = $1", id)
		return err
	}
	if err := summarize("delete before", forAll(del)); err != nil {
		return err
	}
	defer forAll(func(_ context.Context, id int64) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return del(ctx, id)
	})
	errs := forAll(func(ctx context.Context, id int64) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO drv_items (id, val) VALUES ($1, $2)", id, strconv.FormatInt(id, 10)); err != nil {
				return err
			}
			var v string
			if err := tx.QueryRow(ctx, "SELECT val FROM drv_items WHERE id = $1", id).Scan(&v); err != nil {
				return err
			}
			if v != strconv.FormatInt(id, 10) {
				return fmt.Errorf("id %d read back %q", id, v)
			}
			return nil
		})
	})
	if err := summarize("transactions", errs); err != nil {
		return err
	}
	errs = forAll(func(ctx context.Context, id int64) error {
		var v string
		if err := pool.QueryRow(ctx, "SELECT val FROM drv_items WHERE id = $1", id).Scan(&v); err != nil {
			return err
		}
		if v != strconv.FormatInt(id, 10) {
			return fmt.Errorf("id %d read back %q after commit", id, v)
		}
		return nil
	})
	return summarize("reads after commit", errs)
}

// fanout_error_recovery: a keyless read (sent to every shard on a sharded
// cluster, each holding some of the check's rows) that fails at run time
// with one parameter and works with another, on the connection that saw the
// error and on a new one.
func checkFanoutErrorRecovery(t *T) error {
	const q = "SELECT id FROM drv_items WHERE val = (1 / $1::int)::text"
	run := func(conn *pgx.Conn, what string, divisor int32) error {
		rows, err := conn.Query(t.ctx, q, divisor)
		if err == nil {
			for rows.Next() {
			}
			rows.Close()
			err = rows.Err()
		}
		if divisor == 0 {
			return wantState(what+" with 0", err, "22012")
		}
		if err != nil {
			return fmt.Errorf("%s with %d: %s", what, divisor, describe(err))
		}
		return nil
	}
	conn, err := t.connect()
	if err != nil {
		return err
	}
	// Rows on every shard: the division must run on each whatever plan the
	// server picks (a generic plan evaluates it per row, so on an empty
	// table it would not fail at all).
	var ids []int64
	for i := 0; i < 16; i++ {
		ids = append(ids, t.id(i))
	}
	if err := t.ownRows(conn, ids...); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := conn.Exec(t.ctx, "INSERT INTO drv_items (id, val) VALUES ($1, 'x')", id); err != nil {
			return fmt.Errorf("insert: %s", describe(err))
		}
	}
	for round := 1; round <= 3; round++ {
		for _, d := range []int32{0, 2} {
			if err := run(conn, fmt.Sprintf("round %d", round), d); err != nil {
				return err
			}
		}
	}
	fresh, err := t.connect()
	if err != nil {
		return err
	}
	for _, d := range []int32{2, 0, 2} {
		if err := run(fresh, "new connection", d); err != nil {
			return err
		}
	}
	return nil
}

// admin_show_pools: the admin console answers SHOW POOLS and SHOW CLIENTS
// over the simple protocol, and its counters are sane (never negative or
// wrapped around). Skipped (passes) when no admin user is given, as when
// the checks run against Postgres directly.
func checkAdmin(t *T) error {
	if t.env.adminUser == "" {
		return nil
	}
	cfg, err := pgx.ParseConfig(t.env.connString(t.env.adminUser, t.env.adminPassword, "admin"))
	if err != nil {
		return err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := t.connectConfig(cfg)
	if err != nil {
		return err
	}
	for _, cmd := range []string{"SHOW POOLS", "SHOW CLIENTS"} {
		rows, err := conn.Query(t.ctx, cmd)
		if err != nil {
			return fmt.Errorf("%s: %s", cmd, describe(err))
		}
		fds := rows.FieldDescriptions()
		nrows := 0
		var bad []string
		for rows.Next() {
			nrows++
			vals := rows.RawValues()
			for i, fd := range fds {
				if cmd != "SHOW POOLS" || !(strings.HasPrefix(fd.Name, "cl_") || strings.HasPrefix(fd.Name, "sv_")) || vals[i] == nil {
					continue
				}
				n, err := strconv.ParseInt(string(vals[i]), 10, 64)
				if err != nil || n < 0 || n > 10000 {
					bad = append(bad, fmt.Sprintf("%s=%s", fd.Name, vals[i]))
				}
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("%s: %s", cmd, describe(err))
		}
		if cmd == "SHOW POOLS" && nrows == 0 {
			return errors.New("SHOW POOLS: no rows")
		}
		if len(bad) > 0 {
			return fmt.Errorf("%s: insane counters %s", cmd, strings.Join(bad, ", "))
		}
	}
	return nil
}
