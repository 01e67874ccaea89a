package flagenv_test

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/internal/flagenv"
	"github.com/heraldhq/herald/internal/database"
)

// testBundle is a FlagSet with one flag of each kind the programs use.
type testBundle struct {
	fs      *flagenv.FlagSet
	workers int
	migrate bool
	timeout time.Duration
	addr    string
	log     flagenv.LogFormat
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{fs: flagenv.New("test")}
	b.fs.SetOutput(&bytes.Buffer{})
	b.fs.IntVar(&b.workers, "workers", 500, "workers")
	b.fs.Env("workers", "TEST_WORKERS")
	b.fs.BoolVar(&b.migrate, "migrate", true, "migrate")
	b.fs.Env("migrate", "TEST_MIGRATE")
	b.fs.DurationVar(&b.timeout, "timeout", 15*time.Second, "timeout")
	b.fs.Env("timeout", "TEST_TIMEOUT")
	b.fs.StringVar(&b.addr, "addr", ":8080", "addr")
	b.fs.Env("addr", "TEST_ADDR")
	b.fs.LogFormatVar(&b.log)
	return b
}

func TestCommandLineWinsThenEnvironmentThenDefault(t *testing.T) {
	t.Setenv("TEST_WORKERS", "20")
	t.Setenv("TEST_MIGRATE", "false")
	t.Setenv("TEST_ADDR", ":9000")
	t.Setenv("HERALD_LOG_FORMAT", "json")
	b := setup(t)

	require.NoError(t, b.fs.Parse([]string{"--workers", "7"}))
	require.Equal(t, 7, b.workers, "the command line wins over the environment")
	require.False(t, b.migrate, "the environment wins over the default")
	require.Equal(t, ":9000", b.addr)
	require.Equal(t, flagenv.LogFormat("json"), b.log)
	require.Equal(t, 15*time.Second, b.timeout, "the default stays when neither is given")
}

func TestEmptyVariableMeansUnset(t *testing.T) {
	t.Setenv("TEST_WORKERS", "")
	t.Setenv("TEST_ADDR", "")
	b := setup(t)

	require.NoError(t, b.fs.Parse(nil))
	require.Equal(t, 500, b.workers)
	require.Equal(t, ":8080", b.addr)
}

func TestMalformedVariablesAreAllNamedWithTheirForm(t *testing.T) {
	t.Setenv("TEST_WORKERS", "abc")
	t.Setenv("TEST_MIGRATE", "maybe")
	t.Setenv("TEST_TIMEOUT", "soon")
	t.Setenv("HERALD_LOG_FORMAT", "xml")
	b := setup(t)

	err := b.fs.Parse(nil)
	require.ErrorContains(t, err, `TEST_WORKERS="abc" is not a whole number`)
	require.ErrorContains(t, err, `TEST_MIGRATE="maybe" is not true or false`)
	require.ErrorContains(t, err, `TEST_TIMEOUT="soon" is not a duration; write it like 15s, 3m or 72h`)
	require.ErrorContains(t, err, `HERALD_LOG_FORMAT="xml": want text or json`)
}

func TestMalformedVariableUnderACommandLineFlagIsNotRead(t *testing.T) {
	t.Setenv("TEST_WORKERS", "abc")
	b := setup(t)

	require.NoError(t, b.fs.Parse([]string{"--workers=3"}))
	require.Equal(t, 3, b.workers)
}

func TestHelpShowsDefaultsAndVariablesButNotTheEnvironment(t *testing.T) {
	t.Setenv("HERALD_DATABASE_URL", "postgres://herald:hunter2@db.internal/herald")
	fs := flagenv.New("test")
	var out bytes.Buffer
	fs.SetOutput(&out)
	var db flagenv.Database
	fs.DatabaseVar(&db, 25)

	require.ErrorIs(t, fs.Parse([]string{"--help"}), flag.ErrHelp)
	help := out.String()
	require.Contains(t, help, `(env HERALD_DATABASE_URL) (default "postgres://postgres@127.0.0.1:5432/herald?sslmode=disable")`)
	require.Contains(t, help, "(env HERALD_MIGRATE) (default true)")
	require.Contains(t, help, "(env HERALD_MAX_CONNS) (default 25)")
	require.Contains(t, help, "(env HERALD_DB_STATEMENT_TIMEOUT) (default 1m0s)")
	require.Contains(t, help, "(env HERALD_MIGRATE_TIMEOUT) (default 10m0s)")
	require.NotContains(t, help, "hunter2", "--help never prints the environment's values")
}

func TestDatabaseTimeoutsComeFromFlagsAndEnvironment(t *testing.T) {
	t.Setenv("HERALD_DB_IDLE_IN_TRANSACTION_TIMEOUT", "5s")
	t.Setenv("HERALD_DB_TCP_USER_TIMEOUT", "-1s")
	fs := flagenv.New("test")
	var db flagenv.Database
	fs.DatabaseVar(&db, 25)

	require.NoError(t, fs.Parse([]string{"--db-statement-timeout", "2m", "--migrate-timeout", "1h"}))
	require.Equal(t, database.Timeouts{
		Connect:           database.DefaultConnectTimeout,
		Statement:         2 * time.Minute,
		IdleInTransaction: 5 * time.Second,
		Ping:              database.DefaultPingTimeout,
		KeepAlive:         database.DefaultKeepAlive,
		TCPUser:           -time.Second,
	}, db.Timeouts)
	require.Equal(t, time.Hour, db.MigrationTimeout)
	require.Equal(t, "herald-test", db.ApplicationName, "pg_stat_activity names the program")
}

func TestEnvWithoutItsFlagPanics(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, `flagenv: test has no flag "workers" to read from TEST_WORKERS`, func() {
		flagenv.New("test").Env("workers", "TEST_WORKERS")
	})
}
