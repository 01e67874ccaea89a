package chaos_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/harness/chaos"
	"github.com/heraldhq/herald/internal/pgtest"
)

// TestMain runs the test binary as the consumer's worker process when
// the run starts it so (see chaos.Setup.Self).
func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(chaos.ConsumerWorkerEnv); ok {
		if err := chaos.RunConsumerWorker(spec); err != nil {
			fmt.Fprintln(os.Stderr, "chaos consumer worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The small run: 1,000 events through two dispatcher processes, two of
// them killed along the way, every connection to the test's two databases
// broken once (the server is shared with other tests, so it is not
// restarted), the consumer failing, hanging and dropping responses, and
// the run's other disruptions: an endpoint gone and replayed, resends,
// jobs ended by force, a black-holed dispatcher and a poison event; a
// fifth of the events go to an endpoint with ordering object.
func TestChaos(t *testing.T) {
	t.Parallel()
	runSmall(t, false)
}

// The small run in split mode: the producers publish into a database of
// their own that holds only the outbox, and the dispatchers relay it into
// Herald's, killed (SIGKILL) with them at any point of a relay step,
// between its two commits included; the same invariants hold, and the
// producer's database holds nothing but the outbox. It does not run in
// parallel: beside TestChaos on two shared cores, the two runs' timing
// (the black hole waits for a dispatcher that has started) suffered.
func TestChaosSplit(t *testing.T) {
	report := runSmall(t, true)
	require.Equal(t, report.Events, report.Relayed)
}

// runSmall runs chaos.Small, in split mode when split is set, checks what
// every run must show and returns the report.
func runSmall(t *testing.T, split bool) *chaos.Report {
	t.Helper()
	ctx := context.Background()
	self, err := os.Executable()
	require.NoError(t, err)
	heraldURL := pgtest.NewDatabase(t, pgtest.Herald)
	consumerURL := pgtest.NewDatabase(t, pgtest.Empty)
	databases := []string{databaseName(t, heraldURL), databaseName(t, consumerURL)}
	var producerURL string
	if split {
		producerURL = pgtest.NewDatabase(t, pgtest.Empty)
		databases = append(databases, databaseName(t, producerURL))
	}
	bin, err := chaos.BuildDispatcher(ctx, t.TempDir())
	require.NoError(t, err)

	cfg := chaos.Small()
	report, err := chaos.Run(ctx, cfg, chaos.Setup{
		HeraldURL:   heraldURL,
		ConsumerURL: consumerURL,
		ProducerURL: producerURL,
		Dispatcher:  bin,
		Outage: chaos.TerminateConnections{
			AdminURL:  withDatabase(t, heraldURL, "postgres"),
			Databases: databases,
			Down:      time.Second,
		},
		LogDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
		Self:   self,
	})
	require.NoError(t, err)
	var table bytes.Buffer
	require.NoError(t, report.WriteTable(&table))
	t.Logf("\n%s", table.String())

	require.Empty(t, report.Problems, "the run's checks:\n%s", table.String())
	require.Equal(t, cfg.Events, report.Events)
	require.Equal(t, cfg.Events-1, report.AppliedOnce, "every committed event but the poison one applied exactly once")
	require.True(t, report.PoisonDead, "the poison event is a dead letter")
	require.Positive(t, report.WorkerCrashes)
	require.Zero(t, report.InFlightAtOnce, "no delivery had two attempts in flight at once")
	require.Zero(t, report.Deliveries["pending"])
	require.Equal(t, cfg.Resends, report.ResentSucceeded)
	require.Equal(t, cfg.ForcedEnds, report.ForcedRecovered)
	require.Positive(t, report.GoneAttempts, "the second endpoint was disabled by a 410")
	require.Positive(t, report.Replayed)
	require.Equal(t, report.GoneDeliveries, report.GoneSucceeded)
	require.Equal(t, 1, report.BlackHoles)
	require.Positive(t, report.OrderedEvents, "some events go to the ordered endpoint")
	require.Greater(t, report.OrderedRequests, report.OrderedEvents, "and some of them were retried")
	require.Zero(t, report.OutOfOrder, "each object's versions arrived at the ordered endpoint in turn")
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
	return report
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
