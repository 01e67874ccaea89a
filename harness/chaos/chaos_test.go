package chaos_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/harness/chaos"
	"github.com/heraldhq/herald/internal/pgtest"
)

// The small run: 1,000 events through two dispatcher processes, two of
// them killed along the way, every connection to the test's two databases
// broken once (the server is shared with other tests, so it is not
// restarted), and the consumer failing, hanging and dropping responses.
func TestChaos(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	heraldURL := pgtest.NewDatabase(t, pgtest.Herald)
	consumerURL := pgtest.NewDatabase(t, pgtest.Empty)
	bin, err := chaos.BuildDispatcher(ctx, t.TempDir())
	require.NoError(t, err)

	cfg := chaos.Small()
	report, err := chaos.Run(ctx, cfg, chaos.Setup{
		HeraldURL:   heraldURL,
		ConsumerURL: consumerURL,
		Dispatcher:  bin,
		Outage: chaos.TerminateConnections{
			AdminURL:  withDatabase(t, heraldURL, "postgres"),
			Databases: []string{databaseName(t, heraldURL), databaseName(t, consumerURL)},
			Down:      time.Second,
		},
		LogDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	require.NoError(t, err)
	var table bytes.Buffer
	require.NoError(t, report.WriteTable(&table))
	t.Logf("\n%s", table.String())

	require.Empty(t, report.Problems, "the run's checks:\n%s", table.String())
	require.Equal(t, cfg.Events, report.Events)
	require.Equal(t, cfg.Events, report.AppliedOnce, "every committed event applied exactly once")
	require.Zero(t, report.Lost)
	require.Zero(t, report.AppliedTwice)
	require.Equal(t, report.Objects, report.ObjectsLatest)
	require.Equal(t, cfg.Kills, report.Kills)
	require.Equal(t, cfg.Kills, report.Restarts)
	require.Equal(t, 1, report.PostgresRestarts)
	require.Positive(t, report.RolledBack, "some events must have been rolled back for the check to mean anything")
	require.Positive(t, report.Retries)
	require.Positive(t, report.DuplicatesDelivered, "dropped and late answers must have caused duplicates")
	require.Equal(t, report.DuplicatesDelivered, report.DuplicatesAbsorbed)
}

func withDatabase(t *testing.T, raw, name string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

func databaseName(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return strings.TrimPrefix(u.Path, "/")
}
