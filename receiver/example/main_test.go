package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/receiver"
	"github.com/heraldhq/herald/signing"
)

// crashChildEnv, when set to a database URL, turns the test binary into a
// worker process that dies mid-transaction (see TestMain).
const crashChildEnv = "RECEIVER_EXAMPLE_CRASH_CHILD_DATABASE_URL"

func TestMain(m *testing.M) {
	if url := os.Getenv(crashChildEnv); url != "" {
		os.Exit(runWorkerThatHangsBeforeCommit(url))
	}
	os.Exit(m.Run())
}

// runWorkerThatHangsBeforeCommit applies one batch with the example's own
// apply, says "applied" once the side effect is written but not committed,
// and then waits to be killed.
func runWorkerThatHangsBeforeCommit(url string) int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	hang := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
		if err := apply(ctx, tx, ev); err != nil {
			return err
		}
		fmt.Println("applied", ev.WebhookID)
		time.Sleep(time.Hour)
		return nil
	}
	// A short lease, so the restarted worker need not wait a minute for
	// this one's to lapse.
	w, err := receiver.NewWorker(pool, hang, receiver.WorkerConfig{LeaseDuration: time.Second, PruneInterval: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := w.ProcessBatch(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type testBundle struct {
	ctx    context.Context
	url    string
	pool   *pgxpool.Pool
	secret signing.Secret
	server *httptest.Server
	worker *receiver.Worker
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := t.Context()
	url := pgtest.NewDatabase(t, pgtest.Empty)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, migrate(ctx, pool))
	secret, err := signing.GenerateHMACSecret()
	require.NoError(t, err)
	routes, worker, err := newConsumer(pool, "herald", []signing.Secret{secret}, quietWorker())
	require.NoError(t, err)
	server := httptest.NewServer(routes)
	t.Cleanup(server.Close)
	return &testBundle{ctx: ctx, url: url, pool: pool, secret: secret, server: server, worker: worker}
}

// quietWorker retries at once and logs nothing, so tests need not wait.
func quietWorker() receiver.WorkerConfig {
	return receiver.WorkerConfig{
		RetryDelay: func(int) time.Duration { return 0 },
		Logger:     slog.New(slog.DiscardHandler),
	}
}

// event is one webhook as Herald sends it.
type event struct {
	id      string
	typ     string
	account string
	version int64
	created time.Time
	data    string
}

func (e event) body() []byte {
	return fmt.Appendf(nil, `{"type":%q,"timestamp":%q,"object":{"id":%q,"version":%d},"data":%s}`,
		e.typ, e.created.UTC().Format(time.RFC3339), e.account, e.version, e.data)
}

func creditEvent(id, account string, amount int64) event {
	return event{id: id, typ: "account.credited", account: account, version: 1, created: time.Now(), data: fmt.Sprintf(`{"amount":%d}`, amount)}
}

func planEvent(id, account string, version int64, created time.Time) event {
	return event{id: id, typ: "account.plan_changed", account: account, version: version, created: created, data: fmt.Sprintf(`{"plan":"plan_v%d"}`, version)}
}

// deliver sends e signed now with the bundle's secret (or secrets) and
// returns the status code.
func (b *testBundle) deliver(t *testing.T, e event, secrets ...signing.Secret) int {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []signing.Secret{b.secret}
	}
	req, err := http.NewRequestWithContext(b.ctx, http.MethodPost, b.server.URL+"/webhooks", bytes.NewReader(e.body()))
	require.NoError(t, err)
	require.NoError(t, signing.SignHeaders(req.Header, e.id, time.Now(), e.body(), secrets...))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// drain runs the worker until no event is due.
func (b *testBundle) drain(t *testing.T) {
	t.Helper()
	for {
		n, err := b.worker.ProcessBatch(b.ctx)
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
}

func (b *testBundle) account(t *testing.T, id string) (credits int64, plan string) {
	t.Helper()
	err := b.pool.QueryRow(b.ctx, `SELECT credits, coalesce(plan, '') FROM accounts WHERE id = $1`, id).Scan(&credits, &plan)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ""
	}
	require.NoError(t, err)
	return credits, plan
}

// The article's pre-launch checklist, each item against the example
// consumer over HTTP on loopback with real signatures and real Postgres.
func TestChecklist(t *testing.T) {
	t.Parallel()

	t.Run("1_SameEventTwiceIsAppliedOnce", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		e := creditEvent("msg_1", "acct_1", 100)

		require.Equal(t, http.StatusOK, bundle.deliver(t, e))
		bundle.drain(t)
		require.Equal(t, http.StatusOK, bundle.deliver(t, e), "the second copy is acknowledged")
		bundle.drain(t)

		credits, _ := bundle.account(t, "acct_1")
		require.EqualValues(t, 100, credits)
	})

	t.Run("2_TwoCopiesAtTheSameMomentAreAppliedOnce", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		e := creditEvent("msg_1", "acct_1", 100)

		// Parallel requests, and two workers draining while they land.
		var wg sync.WaitGroup
		statuses := make([]int, 4)
		for i := range statuses {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(bundle.ctx, http.MethodPost, bundle.server.URL+"/webhooks", bytes.NewReader(e.body()))
				_ = signing.SignHeaders(req.Header, e.id, time.Now(), e.body(), bundle.secret)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					statuses[i] = resp.StatusCode
					resp.Body.Close()
				}
			})
		}
		second, err := receiver.NewWorker(bundle.pool, apply, quietWorker())
		require.NoError(t, err)
		for _, w := range []*receiver.Worker{bundle.worker, second} {
			wg.Go(func() {
				for range 20 {
					_, _ = w.ProcessBatch(bundle.ctx)
				}
			})
		}
		wg.Wait()
		bundle.drain(t)

		for _, s := range statuses {
			require.Equal(t, http.StatusOK, s)
		}
		credits, _ := bundle.account(t, "acct_1")
		require.EqualValues(t, 100, credits)
	})

	t.Run("3_ShuffledVersionedUpdatesEndOnTheLatest", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		// 30 plan updates for one account, two per second: every pair
		// shares its created second, so timestamps cannot order them.
		start := time.Date(2026, 10, 23, 12, 0, 0, 0, time.UTC)
		var events []event
		for v := int64(1); v <= 30; v++ {
			events = append(events, planEvent(fmt.Sprintf("msg_%d", v), "acct_1", v, start.Add(time.Duration((v-1)/2)*time.Second)))
		}
		rng := rand.New(rand.NewPCG(20261023, 0))
		rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		for _, e := range events {
			require.Equal(t, http.StatusOK, bundle.deliver(t, e))
			if rng.IntN(3) == 0 {
				bundle.drain(t) // process part of the batch as it arrives
			}
		}
		bundle.drain(t)

		_, plan := bundle.account(t, "acct_1")
		require.Equal(t, "plan_v30", plan)
	})

	t.Run("3_SameSecondPairNewerFirst", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		created := time.Unix(1790000039, 0)

		require.Equal(t, http.StatusOK, bundle.deliver(t, planEvent("evt_000091", "acct_0388", 2, created)))
		bundle.drain(t)
		require.Equal(t, http.StatusOK, bundle.deliver(t, planEvent("evt_000090", "acct_0388", 1, created)))
		bundle.drain(t)

		_, plan := bundle.account(t, "acct_0388")
		require.Equal(t, "plan_v2", plan, "the older update of the same second must not win")
	})

	t.Run("4_WorkerKilledBeforeCommitAppliesOnceAfterRestart", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		require.Equal(t, http.StatusOK, bundle.deliver(t, creditEvent("msg_1", "acct_1", 100)))

		child := exec.CommandContext(bundle.ctx, os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), crashChildEnv+"="+bundle.url)
		child.Stderr = os.Stderr
		stdout, err := child.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, child.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err, "the worker process should report the side effect")
		require.Equal(t, "applied msg_1\n", line)

		credits, _ := bundle.account(t, "acct_1")
		require.Zero(t, credits, "the side effect is not committed yet")
		require.NoError(t, child.Process.Kill())
		require.Error(t, child.Wait(), "the worker process was killed")

		// Postgres rolls back the dead process's transaction once it
		// notices the closed connection, and the lease lapses; a restarted
		// worker then claims the event and applies it, uncharged: it was
		// leased as a batch, so its death is not proof that it killed the
		// process.
		require.Eventually(t, func() bool {
			n, err := bundle.worker.ProcessBatch(bundle.ctx)
			require.NoError(t, err)
			return n == 1
		}, 30*time.Second, 50*time.Millisecond)
		bundle.drain(t)

		credits, _ = bundle.account(t, "acct_1")
		require.EqualValues(t, 100, credits, "applied once: not lost, not twice")
		var attempts int
		var processed bool
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx,
			`SELECT attempts, processed_at IS NOT NULL FROM webhook_inbox.events WHERE webhook_id = 'msg_1'`).Scan(&attempts, &processed))
		require.True(t, processed)
		require.Zero(t, attempts, "the killed attempt failed nothing")
	})

	t.Run("5_DayOldReplayIsStillDeduplicated", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		e := creditEvent("msg_1", "acct_1", 100)
		require.Equal(t, http.StatusOK, bundle.deliver(t, e))
		bundle.drain(t)

		// A day passes and the retention job runs.
		_, err := bundle.pool.Exec(bundle.ctx, `UPDATE webhook_inbox.events
SET received_at = received_at - interval '1 day', processed_at = processed_at - interval '1 day'`)
		require.NoError(t, err)
		_, err = receiver.Prune(bundle.ctx, bundle.pool, 0)
		require.NoError(t, err)

		// The sender resends: same webhook-id, fresh timestamp and signature.
		require.Equal(t, http.StatusOK, bundle.deliver(t, e))
		bundle.drain(t)
		credits, _ := bundle.account(t, "acct_1")
		require.EqualValues(t, 100, credits)
	})

	t.Run("6_SecretRotationOverlap", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		newSecret, err := signing.GenerateHMACSecret()
		require.NoError(t, err)

		// The consumer is configured as its operator would during the
		// overlap: both secrets in --secret.
		opts, err := parseFlags([]string{"--secret", bundle.secret.String() + "," + newSecret.String()}, io.Discard)
		require.NoError(t, err)
		routes, _, err := newConsumer(bundle.pool, "herald", opts.secrets, quietWorker())
		require.NoError(t, err)
		bundle.server = httptest.NewServer(routes)
		t.Cleanup(bundle.server.Close)

		require.Equal(t, http.StatusOK, bundle.deliver(t, creditEvent("msg_old", "acct_1", 1), bundle.secret))
		require.Equal(t, http.StatusOK, bundle.deliver(t, creditEvent("msg_new", "acct_1", 1), newSecret))
		require.Equal(t, http.StatusOK, bundle.deliver(t, creditEvent("msg_both", "acct_1", 1), newSecret, bundle.secret))
		stranger, err := signing.GenerateHMACSecret()
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bundle.deliver(t, creditEvent("msg_forged", "acct_1", 1), stranger))
		bundle.drain(t)
		credits, _ := bundle.account(t, "acct_1")
		require.EqualValues(t, 3, credits)
	})

	t.Run("7_RetentionKeepsKeysForTheConfiguredTime", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		recent, old := creditEvent("msg_29d", "acct_1", 100), creditEvent("msg_31d", "acct_2", 100)
		for _, e := range []event{recent, old} {
			require.Equal(t, http.StatusOK, bundle.deliver(t, e))
		}
		bundle.drain(t)
		for id, age := range map[string]string{"msg_29d": "29 days", "msg_31d": "31 days"} {
			_, err := bundle.pool.Exec(bundle.ctx, `UPDATE webhook_inbox.events SET received_at = now() - $2::interval WHERE webhook_id = $1`, id, age)
			require.NoError(t, err)
		}

		_, err := receiver.Prune(bundle.ctx, bundle.pool, 3*24*time.Hour)
		require.ErrorIs(t, err, receiver.ErrRetentionTooShort, "a 3-day retention would forget keys senders still resend")
		deleted, err := receiver.Prune(bundle.ctx, bundle.pool, 0)
		require.NoError(t, err)
		require.EqualValues(t, 1, deleted)

		// Inside the 30 days a resend is still caught.
		require.Equal(t, http.StatusOK, bundle.deliver(t, recent))
		bundle.drain(t)
		credits, _ := bundle.account(t, "acct_1")
		require.EqualValues(t, 100, credits)
	})

	t.Run("8_FailingEventBecomesDeadLetterWhileOthersFlow", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		poison := creditEvent("msg_poison", "acct_1", 100)
		poison.data = `{"amount":-5}`
		require.Equal(t, http.StatusOK, bundle.deliver(t, poison), "a bad event is acknowledged: failures stay on our side")
		for i := range 10 {
			require.Equal(t, http.StatusOK, bundle.deliver(t, creditEvent(fmt.Sprintf("msg_%d", i), "acct_1", 100)))
		}
		bundle.drain(t)

		credits, _ := bundle.account(t, "acct_1")
		require.EqualValues(t, 1000, credits)
		letters, err := receiver.ListDeadLetters(bundle.ctx, bundle.pool, 0)
		require.NoError(t, err)
		require.Len(t, letters, 1)
		require.Equal(t, "msg_poison", letters[0].WebhookID)
		require.Equal(t, receiver.DefaultMaxAttempts, letters[0].Attempts)
		require.Contains(t, letters[0].LastError, "positive amount")
	})
}

func TestParseFlags(t *testing.T) {
	t.Parallel()

	t.Run("SecretIsRequired", func(t *testing.T) {
		t.Parallel()
		_, err := parseFlags([]string{"--secret", ""}, io.Discard)
		require.ErrorContains(t, err, "--secret (or WEBHOOK_SECRET) is required")
	})

	t.Run("BadSecretIsNamed", func(t *testing.T) {
		t.Parallel()
		_, err := parseFlags([]string{"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw,nope_x"}, io.Discard)
		require.ErrorIs(t, err, signing.ErrInvalidSecret)
		require.ErrorContains(t, err, "entry 2")
	})

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		secret, err := signing.GenerateHMACSecret()
		require.NoError(t, err)
		opts, err := parseFlags([]string{"--secret", secret.String()}, io.Discard)
		require.NoError(t, err)
		require.Equal(t, "herald", opts.source)
		require.True(t, strings.HasPrefix(opts.databaseURL, "postgres://"))
		require.Len(t, opts.secrets, 1)
	})
}

// TestRun starts the program as main does and delivers one event to it.
func TestRun(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t, pgtest.Empty)
	secret, err := signing.GenerateHMACSecret()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	output := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--database-url", url, "--secret", secret.String(), "--listen", "127.0.0.1:0"}, output)
	}()
	var address string
	require.Eventually(t, func() bool {
		_, rest, ok := strings.Cut(output.String(), "url=")
		address, _, _ = strings.Cut(rest, " ")
		return ok && strings.HasSuffix(address, "/webhooks")
	}, 30*time.Second, 20*time.Millisecond, "the program should log its URL")

	e := creditEvent("msg_1", "acct_1", 100)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, address, bytes.NewReader(e.body()))
	require.NoError(t, err)
	require.NoError(t, signing.SignHeaders(req.Header, e.id, time.Now(), e.body(), secret))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	defer pool.Close()
	require.Eventually(t, func() bool {
		var credits int64
		err := pool.QueryRow(t.Context(), `SELECT credits FROM accounts WHERE id = 'acct_1'`).Scan(&credits)
		return err == nil && credits == 100
	}, 30*time.Second, 20*time.Millisecond, "the program's worker should apply the event")

	cancel()
	require.NoError(t, <-done)
}

// syncBuffer is a bytes.Buffer safe for the program's logger and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
