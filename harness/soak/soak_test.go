package soak_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/harness/chaos"
	"github.com/heraldhq/herald/harness/soak"
	"github.com/heraldhq/herald/internal/pgtest"
)

// The small run: the dispatcher delivers, the run's own passes (a clock
// three minutes ahead) find the current partition set past retention and
// keep it while it holds pending deliveries, then drop it once they
// settle, and every event reaches the receiver.
func TestSoak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin, err := chaos.BuildDispatcher(ctx, t.TempDir())
	require.NoError(t, err)
	cfg := soak.Small()
	report, err := soak.Run(ctx, cfg, soak.Setup{
		DatabaseURL: pgtest.NewDatabase(t, pgtest.Herald),
		Dispatcher:  bin,
		LogDir:      t.TempDir(),
		Logger:      slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	require.NoError(t, err)
	var table bytes.Buffer
	require.NoError(t, report.WriteTable(&table))
	t.Logf("\n%s", table.String())

	require.Empty(t, report.Problems, "the run's checks:\n%s", table.String())
	require.Equal(t, int(cfg.Traffic.Seconds())*cfg.Rate, report.Events)
	require.Equal(t, cfg.Backlog, report.BacklogEvents)
	require.Zero(t, report.LostMain)
	require.Zero(t, report.LostLagging)
	require.Positive(t, report.Answers["500"], "some requests failed, so deliveries were retrying")
	require.NotEmpty(t, report.Kept, "a set past retention was kept while it held pending deliveries")
	require.NotEmpty(t, report.Drops, "and dropped once they settled")
	require.NotEmpty(t, report.Samples)
	require.Zero(t, report.PendingAtEnd)
}
