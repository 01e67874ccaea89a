package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/historyfill"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/portal"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/store"
)

// The aged scenario's shape.
const (
	// DefaultAgedHistory is how many deliveries (with their messages and
	// attempts) the aged database holds before it runs: 30 days at about
	// two a second, the least.
	DefaultAgedHistory = 5_000_000
	// agedReplay is how many of them go to the endpoint that is replayed.
	agedReplay = 100_000
	// agedFirstBurst is the burst of first attempts to that endpoint the
	// replay's rate is compared with.
	agedFirstBurst = 20_000
	// agedSamples is how many times each page is fetched.
	agedSamples = 40
	// agedTenant owns the replayed endpoint.
	agedTenant = "aged-replay"
	// agedSpan is how far back the aged history reaches from the fill,
	// and agedReplayReach how far back from its start the replay reaches:
	// all of that history, with half a day for the fill and the runs
	// before the replay, and within the default retention, before whose
	// horizon the API refuses a replay.
	agedSpan        = 29 * 24 * time.Hour
	agedReplayReach = agedSpan + 12*time.Hour
)

// Age is one side of the aged scenario: a fresh database or an aged one.
type Age struct {
	Age string `json:"age"`
	// History is how many deliveries were bulk-loaded beside the
	// replayed endpoint's; Rows every row loaded.
	History int   `json:"history"`
	Rows    int64 `json:"rows"`
	// FillSeconds is the COPY, VacuumSeconds the VACUUM ANALYZE after it.
	FillSeconds   float64 `json:"fill_seconds"`
	VacuumSeconds float64 `json:"vacuum_seconds"`
	// FirstPerSecond is a burst of first attempts to the replayed
	// endpoint; ReplayPerSecond the replay of its history to it.
	FirstPerSecond  float64 `json:"first_per_second"`
	ReplayPerSecond float64 `json:"replay_per_second"`
	Replayed        int     `json:"replayed"`
	// BatchFirstMS and BatchLastMS are the replay walk's mean time per
	// batch over its first and last tenth of batches.
	BatchFirstMS float64 `json:"batch_first_ms"`
	BatchLastMS  float64 `json:"batch_last_ms"`
	// Pages are p99 response times in milliseconds by page.
	Pages   map[string]float64 `json:"pages_p99_ms"`
	Problem string             `json:"problem,omitempty"`
}

// The pages the aged scenario times, by name.
const (
	pageMetrics        = "/metrics"
	pageAPIMessages    = "API messages by status and endpoint"
	pagePortalLog      = "portal delivery log"
	pagePortalList     = "portal endpoints"
	pagePortalEndpoint = "portal endpoint"
)

var agedPages = []string{pageMetrics, pageAPIMessages, pagePortalLog, pagePortalList, pagePortalEndpoint}

// aged runs s: burst and steady on a fresh database, then on one filled
// with s.History deliveries of history, and on each a burst of first
// attempts to one endpoint, a replay of that endpoint's agedReplay
// deliveries, and the pages.
func (r *runner) aged(ctx context.Context, s Scenario, report *Report) ([]Result, error) {
	burst, _ := find("burst")
	steady, _ := find("steady")
	if s.shrunkTo > 0 {
		burst, steady = burst.Shrunk(s.shrunkTo), steady.Shrunk(s.shrunkTo)
	}
	replayed := min(agedReplay, max(s.History/50, 1))
	var results []Result
	for _, age := range []string{"fresh", "aged"} {
		history := 0
		if age == "aged" {
			history = s.History
		}
		key := secretbox.Generate()
		var fill historyfill.Result
		var endpointID uuid.UUID
		r.progressf("aged: filling the %s database: %d deliveries of history, %d of them to the replayed endpoint", age, history+replayed, replayed)
		newDB, err := r.cfg.NewFilledDatabase(ctx, age, func(ctx context.Context, pool *pgxpool.Pool) error {
			var err error
			if endpointID, err = createReplayedEndpoint(ctx, pool, key); err != nil {
				return err
			}
			fill, err = historyfill.Fill(ctx, pool, historyfill.Spec{
				Deliveries: history,
				Span:       agedSpan,
				Streams:    []historyfill.Stream{{TenantID: agedTenant, EndpointID: endpointID, Deliveries: replayed}},
			})
			return err
		})
		if err != nil {
			return results, fmt.Errorf("fill the %s database: %w", age, err)
		}
		r.progressf("aged: filled the %s database, %d rows, in %.1f s (VACUUM ANALYZE %.1f s)", age, fill.Rows(), fill.Load.Seconds(), fill.Vacuum.Seconds())
		st, err := r.stageOn(ctx, newDB)
		if err != nil {
			return results, err
		}
		// Fresh, burst and steady run as they always do, each on a new
		// database; aged, on the filled one, one after the other, each
		// after the upkeep a database in service would have had.
		for _, sc := range []Scenario{burst, steady} {
			sc.Name = sc.Name + "-" + age
			var res Result
			if age == "fresh" {
				res, err = r.herald(ctx, sc, false)
			} else if err = r.settle(ctx, st); err == nil {
				res, err = r.heraldOn(ctx, st, sc, false, key)
			}
			if err != nil {
				_ = st.close(ctx)
				return results, fmt.Errorf("%s: %w", sc.Name, err)
			}
			results = append(results, res)
		}
		if err := r.settle(ctx, st); err != nil {
			_ = st.close(ctx)
			return results, err
		}
		a, err := r.probe(ctx, st, key, endpointID, replayed)
		_ = st.close(ctx)
		if err != nil {
			return results, fmt.Errorf("%s database: %w", age, err)
		}
		a.Age, a.History, a.Rows = age, history, fill.Rows()
		a.FillSeconds, a.VacuumSeconds = fill.Load.Seconds(), fill.Vacuum.Seconds()
		report.Aged = append(report.Aged, a)
	}
	return results, nil
}

// insufficientPrivilege is Postgres's error code for a command the role
// may not run.
const insufficientPrivilege = "42501"

// settle gives st's database the upkeep it would have had in service
// before the next run: it vacuums and analyses the tables autovacuum would
// have by now (dueForAutovacuum), and writes every dirty page out. This
// server runs with autovacuum off (docs/benchmarks.md), and a fresh
// scenario starts on a new database; without it the aged runs each
// inherited the one before's dead rows and index entries (a burst's
// 100,000 deliveries and jobs, unvacuumed) and the fill's or the last
// run's writes still to be flushed, which a fresh run never has.
func (r *runner) settle(ctx context.Context, st *stage) error {
	start := time.Now()
	rows, err := st.stats.Query(ctx, dueForAutovacuum)
	if err != nil {
		return fmt.Errorf("settle the database: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("settle the database: %w", err)
	}
	for _, table := range tables {
		if _, err := st.stats.Exec(ctx, "VACUUM (ANALYZE) "+table); err != nil {
			return fmt.Errorf("settle the database: vacuum %s: %w", table, err)
		}
	}
	if _, err := st.stats.Exec(ctx, checkpoint); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != insufficientPrivilege {
			return fmt.Errorf("settle the database: checkpoint: %w", err)
		}
		r.progressf("aged: no checkpoint before the next run (%s); grant the bench's role pg_checkpoint to have one", pgErr.Message)
	}
	r.progressf("aged: settled the database: vacuumed and analysed %d tables, checkpoint, in %.1f s", len(tables), time.Since(start).Seconds())
	return nil
}

// createReplayedEndpoint creates the tenant and endpoint whose history is
// replayed, through the store as an operator would; its URL is set to the
// receiver's when the probe starts.
func createReplayedEndpoint(ctx context.Context, pool *pgxpool.Pool, key string) (uuid.UUID, error) {
	box, err := secretbox.Parse(key)
	if err != nil {
		return uuid.Nil, err
	}
	guard := ssrf.New(netip.MustParsePrefix(LoopbackCIDR))
	st, err := store.New(pool, store.Config{Box: box, CheckURL: guard.CheckURL})
	if err != nil {
		return uuid.Nil, err
	}
	if _, err := st.CreateTenant(ctx, store.NewTenant{ID: agedTenant, Name: "bench aged"}); err != nil {
		return uuid.Nil, err
	}
	ep, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: agedTenant, URL: "http://127.0.0.1:9/not-yet"})
	if err != nil {
		return uuid.Nil, err
	}
	return ep.ID, nil
}

// probe measures, on st's database, a burst of first attempts to the
// replayed endpoint, the replay of its history, and the pages.
func (r *runner) probe(ctx context.Context, st *stage, key string, endpointID uuid.UUID, replayed int) (Age, error) {
	a := Age{Pages: map[string]float64{}, Replayed: replayed}
	var arrived atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		arrived.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	pool, err := database.Open(ctx, st.url, database.Options{MaxConns: int32(r.cfg.Producers)})
	if err != nil {
		return a, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `UPDATE herald.endpoints SET url = $2 WHERE id = $1`, endpointID, receiver.URL+"/hook"); err != nil {
		return a, err
	}
	// The api's pools, as cmd/api opens them: standing connections warmed
	// for history, and one more for scrapes.
	apiPool, err := database.Open(ctx, st.url, database.Options{
		MaxConns: api.DefaultMaxConns, MinConns: api.DefaultMinConns, AfterConnect: database.WarmHistory})
	if err != nil {
		return a, err
	}
	defer apiPool.Close()
	metricsPool, err := metrics.OpenPool(ctx, apiPool.Config())
	if err != nil {
		return a, err
	}
	defer metricsPool.Close()
	server, apiKey, session, err := startAgedAPI(ctx, apiPool, metricsPool, key)
	if err != nil {
		return a, err
	}
	defer server.Close()

	// First attempts: a burst published before the dispatcher starts, as
	// in the burst scenario, all to the replayed endpoint.
	before := time.Now()
	prod := &producers{pool: pool, rec: newRecorder(time.Now()), tenants: []string{agedTenant}, count: r.cfg.Producers, perTx: 100}
	first := min(agedFirstBurst, replayed)
	if err := prod.publishAll(ctx, first); err != nil {
		return a, err
	}
	d, err := r.startDispatcher(ctx, "aged probe", st.url, key, "")
	if err != nil {
		return a, err
	}
	defer func() { _, _ = d.Stop(context.WithoutCancel(ctx)) }()
	start := time.Now()
	if err := r.waitArrived(ctx, &arrived, int64(first)); err != nil {
		return a, fmt.Errorf("first attempts: %w", err)
	}
	a.FirstPerSecond = float64(first) / time.Since(start).Seconds()

	// The replay of everything before the burst.
	arrived.Store(0)
	body, _ := json.Marshal(map[string]any{"since": before.Add(-agedReplayReach), "until": before})
	var created struct {
		ID    string `json:"id"`
		Total int    `json:"total"`
	}
	if err := call(ctx, server.URL+"/v1/tenants/"+agedTenant+"/endpoints/"+endpointID.String()+"/replays", apiKey, body, &created); err != nil {
		return a, fmt.Errorf("start the replay: %w", err)
	}
	if created.Total != replayed {
		a.Problem = join(a.Problem, fmt.Sprintf("the replay counted %d deliveries, not %d", created.Total, replayed))
	}
	start = time.Now()
	walk, err := r.watchReplay(ctx, pool, created.ID, &arrived, int64(replayed))
	if err != nil {
		return a, fmt.Errorf("replay: %w", err)
	}
	a.ReplayPerSecond = float64(replayed) / time.Since(start).Seconds()
	a.BatchFirstMS, a.BatchLastMS = walk.tenths()

	// The pages, with the system quiet: once the replay's job has seen
	// its deliveries settle and marked it drained (replay.Worker), as a
	// person would find it after a replay. A view in the second before
	// (the last recordings, the mark) counts what is still pending among
	// the endpoint's pending deliveries, through the index entries the
	// replay's settled ones left: 395 ms on 5,000,000 once.
	arrivedAt := time.Now()
	if err := r.waitDrained(ctx, pool, created.ID); err != nil {
		return a, fmt.Errorf("replay: %w", err)
	}
	r.progressf("aged: the replay was marked drained %.1f s after its last delivery arrived", time.Since(arrivedAt).Seconds())
	urls := map[string]string{
		pageMetrics:        server.URL + "/metrics",
		pageAPIMessages:    server.URL + "/v1/tenants/" + agedTenant + "/messages?status=failed&endpoint_id=" + endpointID.String(),
		pagePortalLog:      server.URL + portal.Path + "/messages",
		pagePortalList:     server.URL + portal.Path + "/endpoints",
		pagePortalEndpoint: server.URL + portal.Path + "/endpoints/" + endpointID.String(),
	}
	for _, name := range agedPages {
		p99, err := timePage(ctx, urls[name], apiKey, session)
		if err != nil {
			return a, fmt.Errorf("%s: %w", name, err)
		}
		a.Pages[name] = p99
	}
	return a, nil
}

// startAgedAPI serves Herald's api with its portal in this process, and
// returns an operator API key and a portal session of agedTenant. Its
// /metrics reads through metricsPool.
func startAgedAPI(ctx context.Context, pool, metricsPool *pgxpool.Pool, key string) (*httptest.Server, string, string, error) {
	box, err := secretbox.Parse(key)
	if err != nil {
		return nil, "", "", err
	}
	st, err := store.New(pool, store.Config{Box: box})
	if err != nil {
		return nil, "", "", err
	}
	logger := slog.New(slog.DiscardHandler)
	p, err := portal.New(portal.Config{Pool: pool, Store: st, Logger: logger})
	if err != nil {
		return nil, "", "", err
	}
	s, err := api.New(api.Config{Pool: pool, MetricsPool: metricsPool, Store: st, Logger: logger, Portal: p})
	if err != nil {
		return nil, "", "", err
	}
	_, apiKey, err := auth.CreateAPIKey(ctx, pool, "", "bench")
	if err != nil {
		return nil, "", "", err
	}
	link, err := auth.MintPortalLink(ctx, pool, agedTenant, time.Hour)
	if err != nil {
		return nil, "", "", err
	}
	session, err := auth.RedeemPortalLink(ctx, pool, link.Token, time.Hour)
	if err != nil {
		return nil, "", "", err
	}
	return httptest.NewServer(s.Handler()), apiKey, session.Token, nil
}

// call POSTs body with the API key and decodes the answer into out.
func call(ctx context.Context, url, apiKey string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	return json.Unmarshal(b, out)
}

// timePage fetches url agedSamples times, one after the other, and
// returns the p99 in milliseconds. Every answer must be 200.
func timePage(ctx context.Context, url, apiKey, session string) (float64, error) {
	var took []float64
	for range agedSamples {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.AddCookie(&http.Cookie{Name: "herald_portal", Value: session})
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		took = append(took, float64(time.Since(start).Microseconds())/1000)
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
	}
	slices.Sort(took)
	return took[(len(took)*99+99)/100-1], nil
}

// waitArrived waits until n requests arrived, or MaxDrain passed.
func (r *runner) waitArrived(ctx context.Context, arrived *atomic.Int64, n int64) error {
	deadline := time.Now().Add(r.cfg.MaxDrain)
	for arrived.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d arrived within %s", arrived.Load(), n, r.cfg.MaxDrain)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// replayWalk is when the replay's walk had enqueued each batch's worth.
type replayWalk struct{ marks []time.Duration }

// tenths returns the mean time per batch over the first and the last tenth
// of the batches, in milliseconds.
func (w replayWalk) tenths() (first, last float64) {
	n := len(w.marks)
	if n < 2 {
		return 0, 0
	}
	tenth := max(n/10, 1)
	mean := func(from, to int) float64 {
		if from == 0 {
			return float64(w.marks[to-1].Microseconds()) / float64(to) / 1000
		}
		return float64((w.marks[to-1] - w.marks[from-1]).Microseconds()) / float64(to-from) / 1000
	}
	return mean(0, tenth), mean(n-tenth, n)
}

// watchReplay polls the replay's progress until it completed and n
// requests arrived, marking when each batch of the walk was enqueued.
func (r *runner) watchReplay(ctx context.Context, pool *pgxpool.Pool, id string, arrived *atomic.Int64, n int64) (replayWalk, error) {
	var w replayWalk
	start := time.Now()
	deadline := start.Add(r.cfg.MaxDrain)
	last := -1
	for {
		var enqueued int
		var status string
		if err := pool.QueryRow(ctx, `SELECT enqueued, status FROM herald.replays WHERE id = $1`, id).Scan(&enqueued, &status); err != nil {
			return w, err
		}
		if enqueued != last {
			for len(w.marks)*replay.DefaultBatchSize < enqueued {
				w.marks = append(w.marks, time.Since(start))
			}
			last = enqueued
		}
		if status == "completed" && arrived.Load() >= n {
			return w, nil
		}
		if time.Now().After(deadline) {
			return w, fmt.Errorf("%d of %d enqueued (%s) and %d arrived within %s", enqueued, n, status, arrived.Load(), r.cfg.MaxDrain)
		}
		select {
		case <-ctx.Done():
			return w, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitDrained waits until the replay id is marked drained.
func (r *runner) waitDrained(ctx context.Context, pool *pgxpool.Pool, id string) error {
	deadline := time.Now().Add(r.cfg.MaxDrain)
	for {
		var drained bool
		if err := pool.QueryRow(ctx, `SELECT drained_at IS NOT NULL FROM herald.replays WHERE id = $1`, id).Scan(&drained); err != nil {
			return err
		}
		if drained {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not marked drained within %s of its last delivery's arrival", r.cfg.MaxDrain)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// progressf writes a progress line, when progress is written.
func (r *runner) progressf(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, format+"\n", args...)
	}
}
