package receiver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/receiver"
)

// crashChildEnv, when set to a database URL, makes the test binary (see
// TestMain) a consumer process whose handler exits the process on the poison event.
const crashChildEnv = "RECEIVER_CRASH_CHILD_DATABASE_URL"

const (
	// crashEvents is how many events the crash test stores; the poison one
	// is the eighth, in the middle of the first batch.
	crashEvents     = 25
	poisonWebhookID = "evt_07"
	// poisonExitCode is how the child dies on the poison event.
	poisonExitCode = 3
	// crashMaxAttempts is the child's WorkerConfig.MaxAttempts.
	crashMaxAttempts = 3
	// crashRunLimit bounds each run of the child.
	crashRunLimit = 30 * time.Second
)

// A handler that kills its process on one event must not wedge the inbox:
// the event becomes a dead letter after MaxAttempts deaths, and every
// other event is applied exactly once. The crash is real: the child is
// this test binary running a Worker whose handler calls os.Exit, restarted
// by this test as a supervisor would.
func TestWorkerEventThatKillsItsProcessBecomesADeadLetter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDatabase(t, inboxTemplate)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	bundle := &testBundle{ctx: ctx, pool: pool}
	// applied records every committed side effect; no unique key, so an
	// event applied twice shows as two rows.
	_, err = pool.Exec(ctx, `CREATE TABLE applied (webhook_id text NOT NULL)`)
	require.NoError(t, err)
	for i := range crashEvents {
		bundle.storeEvent(t, "acme", fmt.Sprintf("evt_%02d", i), "account.credited", creditData{Account: "acct_1", Amount: 1})
	}

	// The poison event costs one death for the batch it came in and one
	// per attempt it then has alone; one more run finishes the rest.
	var exits []string
	for run := 1; run <= crashMaxAttempts+2 && !bundle.inboxSettled(t); run++ {
		exits = append(exits, runCrashingConsumer(t, bundle, url))
	}
	t.Logf("consumer runs: %q", exits)

	var processed, unfinished, poisonAttempts int
	var poisonDead bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT
    count(*) FILTER (WHERE processed_at IS NOT NULL),
    count(*) FILTER (WHERE processed_at IS NULL AND dead_at IS NULL),
    (SELECT attempts FROM webhook_inbox.events WHERE webhook_id = $1),
    (SELECT dead_at IS NOT NULL FROM webhook_inbox.events WHERE webhook_id = $1)
FROM webhook_inbox.events`, poisonWebhookID).Scan(&processed, &unfinished, &poisonAttempts, &poisonDead))
	require.True(t, poisonDead, "the poison event should be a dead letter after %d runs %q; processed = %d, unfinished = %d, poison attempts = %d",
		len(exits), exits, processed, unfinished, poisonAttempts)
	require.Equal(t, crashMaxAttempts, poisonAttempts, "the poison event is a dead letter after MaxAttempts deaths")
	require.Equal(t, crashEvents-1, processed, "every other event is processed")
	require.Zero(t, unfinished)

	letters, err := receiver.ListDeadLetters(ctx, pool, 0)
	require.NoError(t, err)
	require.Len(t, letters, 1)
	require.Equal(t, poisonWebhookID, letters[0].WebhookID)
	require.True(t, strings.HasPrefix(letters[0].LastError, "lease lapsed"), "last error %q", letters[0].LastError)

	rows, err := pool.Query(ctx, `SELECT webhook_id, count(*) FROM applied GROUP BY webhook_id`)
	require.NoError(t, err)
	applied := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		require.NoError(t, rows.Scan(&id, &n))
		applied[id] = n
	}
	require.NoError(t, rows.Err())
	for i := range crashEvents {
		id := fmt.Sprintf("evt_%02d", i)
		want := 1
		if id == poisonWebhookID {
			want = 0 // its effect dies with the process, uncommitted
		}
		require.Equal(t, want, applied[id], "side effects of %s", id)
	}

	for _, exit := range exits[:len(exits)-1] {
		require.Equal(t, fmt.Sprintf("exit status %d", poisonExitCode), exit, "every run but the last dies on the poison event")
	}
}

// inboxSettled reports whether every event is processed or a dead letter.
func (b *testBundle) inboxSettled(t *testing.T) bool {
	t.Helper()
	var unfinished int
	require.NoError(t, b.pool.QueryRow(b.ctx,
		`SELECT count(*) FROM webhook_inbox.events WHERE processed_at IS NULL AND dead_at IS NULL`).Scan(&unfinished))
	return unfinished == 0
}

// runCrashingConsumer runs the consumer process until it dies, the
// inbox settles (then it is killed) or crashRunLimit passes, and says which.
func runCrashingConsumer(t *testing.T, bundle *testBundle, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(bundle.ctx, crashRunLimit)
	defer cancel()
	var output bytes.Buffer
	child := exec.CommandContext(ctx, os.Args[0])
	child.Env = append(os.Environ(), crashChildEnv+"="+url)
	child.Stdout, child.Stderr = &output, &output
	require.NoError(t, child.Start())
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case err := <-exited:
			var exit *exec.ExitError
			if ctx.Err() != nil || !errors.As(err, &exit) {
				t.Logf("consumer output:\n%s", output.String())
				return fmt.Sprintf("stopped after %s: %v", crashRunLimit, err)
			}
			return exit.Error()
		case <-poll.C:
			if bundle.inboxSettled(t) {
				_ = child.Process.Kill()
				<-exited
				return "killed: the inbox settled"
			}
		}
	}
}

// TestMain runs this test binary as the consumer process of
// TestWorkerEventThatKillsItsProcessBecomesADeadLetter when that test starts
// it (crashChildEnv holds the database URL), and as the tests otherwise.
func TestMain(m *testing.M) {
	if url := os.Getenv(crashChildEnv); url != "" {
		if err := runCrashingConsumerChild(url); err != nil {
			fmt.Fprintln(os.Stderr, "crashing consumer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runCrashingConsumerChild is the consumer process: a Worker whose handler
// exits the process on the poison event.
func runCrashingConsumerChild(url string) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	handle := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
		if _, err := tx.Exec(ctx, `INSERT INTO applied (webhook_id) VALUES ($1)`, ev.WebhookID); err != nil {
			return err
		}
		if ev.WebhookID == poisonWebhookID {
			os.Exit(poisonExitCode)
		}
		return nil
	}
	w, err := receiver.NewWorker(pool, handle, receiver.WorkerConfig{
		MaxAttempts:   crashMaxAttempts,
		LeaseDuration: time.Second,
		PollInterval:  20 * time.Millisecond,
		RetryDelay:    noDelay,
		PruneInterval: -1,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}
