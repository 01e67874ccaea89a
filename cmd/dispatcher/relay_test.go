package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
)

// Every malformed or unusable --source-database-url fails start-up with a
// sentence naming the source and the fix, and never prints a password.
func TestBadSourceDatabaseURLsAreNamed(t *testing.T) {
	t.Parallel()
	b, _ := setup(t)
	empty := pgtest.NewDatabase(t, pgtest.Empty)

	for _, tt := range []struct {
		env  []string
		args []string
		want string
	}{
		{args: []string{"--source-database-url", "postgres://u:hunter2@127.0.0.1/billing"},
			want: `--source-database-url #1: a source is name=URL, for example billing=postgres://postgres@127.0.0.1:5432/billing; this one has no name before "="`},
		{args: []string{"--source-database-url", "billing="}, want: `--source-database-url #1: source billing has no URL after "="`},
		{args: []string{"--source-database-url", ""}, want: "--source-database-url #1 is empty; write name=URL"},
		{args: []string{"--source-database-url", "Billing=postgres://u:hunter2@127.0.0.1/billing"},
			want: `--source-database-url #1: source name "Billing" is not valid; use 1 to 63 lower-case letters`},
		{args: []string{"--source-database-url", "billing=postgres://u:hunter2@127.0.0.1:99999/billing"},
			want: "--source-database-url #1: source billing: database URL is not a valid Postgres URL or DSN"},
		{env: []string{"HERALD_SOURCE_DATABASE_URLS=a=postgres://u:hunter2@127.0.0.1/a a=postgres://u:hunter2@127.0.0.1/b"},
			want: "--source-database-url #2: source a is named twice; give each source a name of its own"},
		{args: []string{"--source-database-url", "billing=postgres://u:hunter2@127.0.0.1:1/billing?connect_timeout=2"},
			want: "--source-database-url billing: cannot reach Postgres at 127.0.0.1:1/billing"},
		{args: []string{"--source-database-url", "billing=" + b.url},
			want: "--source-database-url billing: this database holds Herald's own schema"},
		{args: []string{"--source-database-url", "billing=" + empty},
			want: "--source-database-url billing: the producer's outbox is not installed or not current: herald.producer_schema_migrations does not exist; install it with producer.Apply"},
	} {
		cmd := exec.Command(binary, tt.args...)
		cmd.Env = append(os.Environ(), "HERALD_DATABASE_URL="+b.url, "HERALD_SECRET_KEY="+b.key,
			"HERALD_RESCUE_STUCK_AFTER=3s", "HERALD_ENDPOINT_MAX_TIMEOUT=1s", "HERALD_MIGRATE=false")
		cmd.Env = append(cmd.Env, tt.env...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%v %v: %s", tt.env, tt.args, out)
		require.Equal(t, 1, exit.ExitCode())
		require.Contains(t, string(out), tt.want)
		require.NotContains(t, string(out), "hunter2")
	}

	help, err := exec.Command(binary, "--help").CombinedOutput()
	require.NoError(t, err)
	require.Contains(t, string(help), "HERALD_SOURCE_DATABASE_URLS")
	require.Contains(t, string(help), "HERALD_SOURCE_RELAYED_GRACE")
}

// The dispatcher binary in split mode installs the producer's outbox in
// an empty source database (--migrate), relays what a producer publishes
// there, and delivers it.
func TestSplitModeDeliversFromTheSource(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	sourceURL := pgtest.NewDatabase(t, pgtest.Empty)
	rec := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	b.endpoint(t, ctx, rec.URL)
	b.start(t, "HERALD_MIGRATE=true", "HERALD_SOURCE_DATABASE_URLS=billing="+sourceURL)

	source, err := database.Open(ctx, sourceURL, database.Options{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(source.Close)
	var p outbox.Published
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Until the dispatcher has installed the outbox there.
		p, err = outbox.PublishPool(ctx, source, outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{}})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err)
	for deadline := time.Now().Add(30 * time.Second); b.status(t, ctx, p.ID) != "succeeded"; time.Sleep(50 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the message published on the source was not delivered")
	}
	require.Equal(t, 1, rec.Count())
	var from string
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT source FROM herald.messages WHERE id = $1", p.ID).Scan(&from))
	require.Equal(t, "billing", from)
}
