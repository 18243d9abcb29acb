// Driver checks for pgx v5 against pgshard: the harness.
//
// `pgx-checks pgx` reads its target from PGSHARD_* (see the driver suite
// contract in integration/src/driver_cluster.rs), runs every check that applies
// to PGSHARD_MODE one after the other, each with its own deadline, and prints
// one line per check (`ok NAME` or `FAIL NAME: REASON`) and then
// `pgx MODE: N passed, M failed`. It exits 0 iff nothing failed.
//
// The checks themselves are in checks.go; this file holds the environment,
// the runner and small helpers shared by the checks.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// env is the target, from the PGSHARD_* variables.
type env struct {
	host, port, user, password, database string
	adminUser, adminPassword             string
	mode                                 string // transaction, session, sharded or columns
	poolSize, shards                     int
	shardPorts                           []string
}

func loadEnv() (*env, error) {
	get := func(name string, required bool) (string, error) {
		v := os.Getenv(name)
		if v == "" && required {
			return "", fmt.Errorf("%s is not set", name)
		}
		return v, nil
	}
	e := &env{}
	var err error
	for _, f := range []struct {
		name     string
		dst      *string
		required bool
	}{
		{"PGSHARD_HOST", &e.host, true},
		{"PGSHARD_PORT", &e.port, true},
		{"PGSHARD_USER", &e.user, true},
		{"PGSHARD_PASSWORD", &e.password, false},
		{"PGSHARD_DATABASE", &e.database, true},
		{"PGSHARD_ADMIN_USER", &e.adminUser, false},
		{"PGSHARD_ADMIN_PASSWORD", &e.adminPassword, false},
		{"PGSHARD_MODE", &e.mode, true},
	} {
		if *f.dst, err = get(f.name, f.required); err != nil {
			return nil, err
		}
	}
	switch e.mode {
	case "transaction", "session", "sharded", "columns":
	default:
		return nil, fmt.Errorf("PGSHARD_MODE %q is not transaction, session, sharded or columns", e.mode)
	}
	e.poolSize = atoiOr(os.Getenv("PGSHARD_POOL_SIZE"), 4)
	e.shards = atoiOr(os.Getenv("PGSHARD_SHARDS"), 1)
	if p := os.Getenv("PGSHARD_SHARD_PORTS"); p != "" {
		e.shardPorts = strings.Split(p, ",")
	}
	return e, nil
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func quoteConnValue(v string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `'`, `\'`) + "'"
}

func (e *env) connString(user, password, database string) string {
	return fmt.Sprintf("host=%s port=%s user=%s password=%s dbname=%s sslmode=disable connect_timeout=5",
		quoteConnValue(e.host), quoteConnValue(e.port), quoteConnValue(user),
		quoteConnValue(password), quoteConnValue(database))
}

// check is one named check; modes lists the modes it runs in (nil: all but
// columns, whose checks create their own tables: columns.go).
type check struct {
	name    string
	modes   []string
	timeout time.Duration
	fn      func(t *T) error
}

// T is what a check gets: its context (with the check's deadline), the
// target, a range of drv_items ids of its own, and cleanups run at its end.
type T struct {
	ctx      context.Context
	env      *env
	name     string
	idBase   int64
	mu       sync.Mutex  // guards conns and cleanups (a hung check may still add)
	conns    []*pgx.Conn // closed first when the check ends
	cleanups []func()    // then these, last registered first
}

func (t *T) sharded() bool { return t.env.mode == "sharded" }

// id returns this check's n-th drv_items key (pgx: 7_100_000_000 + check*1000 + n).
func (t *T) id(n int) int64 { return t.idBase + int64(n) }

func (t *T) defer_(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// config parses a connection config for the application user; options adjust it.
func (t *T) config(opts ...func(*pgx.ConnConfig)) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(t.env.connString(t.env.user, t.env.password, t.env.database))
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(cfg)
	}
	return cfg, nil
}

// connect opens a connection that is closed when the check ends.
func (t *T) connect(opts ...func(*pgx.ConnConfig)) (*pgx.Conn, error) {
	cfg, err := t.config(opts...)
	if err != nil {
		return nil, err
	}
	return t.connectConfig(cfg)
}

func (t *T) connectConfig(cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(t.ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.conns = append(t.conns, conn)
	return conn, nil
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

func withMode(m pgx.QueryExecMode) func(*pgx.ConnConfig) {
	return func(c *pgx.ConnConfig) { c.DefaultQueryExecMode = m }
}

// scratchTable drops name (IF EXISTS), creates it with columns, and drops it
// again when the check ends (on a fresh connection: the check's may be broken).
func (t *T) scratchTable(conn *pgx.Conn, name, columns string) error {
	if _, err := conn.Exec(t.ctx, "DROP TABLE IF EXISTS "+name); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	if _, err := conn.Exec(t.ctx, "CREATE TABLE "+name+" ("+columns+")"); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	t.defer_(func() { t.cleanupExec("DROP TABLE IF EXISTS " + name) })
	return nil
}

// cleanupExec runs sql on a fresh connection with its own short deadline.
func (t *T) cleanupExec(sql string, args ...any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, t.env.connString(t.env.user, t.env.password, t.env.database))
	if err != nil {
		return
	}
	defer closeConn(conn)
	_, _ = conn.Exec(ctx, sql, args...)
}

// ownRows deletes this check's drv_items rows ids[...] (keyed deletes, so
// each goes to one shard) before the check and again after it.
func (t *T) ownRows(conn *pgx.Conn, ids ...int64) error {
	for _, id := range ids {
		if _, err := conn.Exec(t.ctx, "DELETE FROM drv_items WHERE id = $1", id); err != nil {
			return fmt.Errorf("delete drv_items id %d: %w", id, err)
		}
	}
	t.defer_(func() {
		for _, id := range ids {
			t.cleanupExec("DELETE FROM drv_items WHERE id = $1", id)
		}
	})
	return nil
}

// sqlState is the SQLSTATE of a server error in err's chain, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// describe renders an error with its SQLSTATE for a FAIL line.
func describe(err error) string {
	if err == nil {
		return "no error"
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return fmt.Sprintf("%s %q", pgErr.Code, pgErr.Message)
	}
	return err.Error()
}

// wantState fails unless err is a server error with SQLSTATE code.
func wantState(what string, err error, code string) error {
	if sqlState(err) != code {
		return fmt.Errorf("%s: want SQLSTATE %s, got %s", what, code, describe(err))
	}
	return nil
}

func isCachedPlanError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "0A000" &&
		strings.Contains(pgErr.Message, "cached plan must not change result type")
}

func applies(c check, mode string) bool {
	if len(c.modes) == 0 {
		return mode != "columns"
	}
	for _, m := range c.modes {
		if m == mode {
			return true
		}
	}
	return false
}

// run runs one check with its deadline; a check still running 3 s after its
// deadline is reported as hung and abandoned (its goroutine leaks; its
// connections are closed by the cleanups, which break the hang).
func run(e *env, c check, index int) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	t := &T{ctx: ctx, env: e, name: c.name, idBase: 7_100_000_000 + int64(index)*1000}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panic: %v", r)
			}
		}()
		done <- c.fn(t)
	}()
	select {
	case err = <-done:
	case <-time.After(c.timeout + 3*time.Second):
		err = fmt.Errorf("hung: no answer within the check's %s deadline", c.timeout)
	}
	cleanupDone := make(chan struct{})
	go func() {
		t.mu.Lock()
		conns, cleanups := t.conns, t.cleanups
		t.mu.Unlock()
		// Connections first: a session-mode cluster serves at most
		// PGSHARD_POOL_SIZE clients at once, and the cleanups connect anew.
		for _, conn := range conns {
			closeConn(conn)
		}
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		close(cleanupDone)
	}()
	select {
	case <-cleanupDone:
	case <-time.After(15 * time.Second):
		if err == nil {
			err = errors.New("cleanup hung")
		}
	}
	return err
}

func main() {
	if len(os.Args) != 2 || os.Args[1] != "pgx" {
		fmt.Fprintln(os.Stderr, "usage: pgx-checks pgx")
		os.Exit(2)
	}
	e, err := loadEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgx-checks:", err)
		os.Exit(2)
	}
	only := os.Getenv("PGSHARD_CHECKS") // optional comma-separated subset, for debugging
	passed, failed := 0, 0
	for i, c := range append(checks(), columnsChecks()...) {
		if !applies(c, e.mode) || (only != "" && !strings.Contains(","+only+",", ","+c.name+",")) {
			continue
		}
		if err := run(e, c, i); err != nil {
			failed++
			fmt.Printf("FAIL %s: %s\n", c.name, strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			passed++
			fmt.Printf("ok %s\n", c.name)
		}
	}
	fmt.Printf("pgx %s: %d passed, %d failed\n", e.mode, passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
