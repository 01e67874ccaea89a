package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

// Setup is what a run needs around it: its databases, the dispatcher
// binary and the outage.
type Setup struct {
	// HeraldURL is a migrated Herald database with no tenants. Required.
	HeraldURL string
	// ConsumerURL is an empty database for the consumer. Required.
	ConsumerURL string
	// Dispatcher is the path of a cmd/dispatcher binary (see
	// BuildDispatcher). Required.
	Dispatcher string
	// Outage breaks the databases' connections once, halfway through. Nil
	// means no outage.
	Outage Outage
	// LogDir receives one log file per dispatcher and, at the end,
	// requests.tsv: every request the consumer got. Required.
	LogDir string
	// Logger receives the run's progress and the consumer's logs. Nil
	// discards them.
	Logger *slog.Logger
}

// pollEvery is how often a run looks at its progress.
const pollEvery = 50 * time.Millisecond

// Run runs cfg in setup and checks the end state. It returns an error when
// the run could not be carried out (a database unreachable, the dispatcher
// missing); what the run found wrong is in Report.Problems.
func Run(ctx context.Context, cfg Config, setup Setup) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if setup.HeraldURL == "" || setup.ConsumerURL == "" || setup.Dispatcher == "" || setup.LogDir == "" {
		return nil, errors.New("chaos: Setup needs HeraldURL, ConsumerURL, Dispatcher and LogDir")
	}
	started := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h, err := prepare(ctx, cfg, setup)
	if err != nil {
		return nil, err
	}
	defer h.close()

	r := &Report{Config: cfg}
	if setup.Outage != nil {
		r.Outage = setup.Outage.String()
	}
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	producersDone := make(chan error, 1)
	go func() { producersDone <- h.producers.run(ctx) }()
	h.logger.Info("chaos: running", "events", cfg.Events, "objects", cfg.Objects, "dispatchers", cfg.Dispatchers)
	if err := runFaults(ctx, cfg, setup.Outage, h.fleet, h.consumer, r, h.logger); err != nil {
		cancel()
		<-producersDone
		return nil, err
	}
	if err := <-producersDone; err != nil {
		return nil, fmt.Errorf("chaos: producers: %w", err)
	}
	h.logger.Info("chaos: every event committed; waiting for the deliveries to settle")
	if err := settle(ctx, cfg, h.herald, h.consumerDB, h.logger); err != nil {
		r.problem("did not settle within %s: %v", cfg.Settle, err)
	}
	h.stop(r)
	if err := h.consumer.writeRequests(filepath.Join(setup.LogDir, "requests.tsv")); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if err := check(ctx, r, h.herald, h.consumerDB, h.consumer.requestsSeen(), h.producers.rolledBackIDs()); err != nil {
		return nil, err
	}
	r.Runtime = time.Since(started)
	return r, nil
}

// harness holds the parts of a run.
type harness struct {
	cfg        Config
	logger     *slog.Logger
	herald     *pgxpool.Pool
	consumerDB *pgxpool.Pool
	consumer   *consumer
	server     *http.Server
	listener   net.Listener
	producers  *producers
	fleet      *fleet

	stopConsumer func() error
}

// prepare opens the databases, creates the producer's table, the tenant
// and its endpoint, and the consumer listening at the endpoint's URL.
func prepare(ctx context.Context, cfg Config, setup Setup) (_ *harness, err error) {
	h := &harness{cfg: cfg, logger: cmp.Or(setup.Logger, slog.New(slog.DiscardHandler))}
	defer func() {
		if err != nil {
			h.close()
		}
	}()
	if h.herald, err = database.Open(ctx, setup.HeraldURL, database.Options{MaxConns: int32(cfg.Producers + 2)}); err != nil {
		return nil, err
	}
	if h.consumerDB, err = database.Open(ctx, setup.ConsumerURL, database.Options{MaxConns: consumerConns}); err != nil {
		return nil, err
	}
	if err := migrateConsumer(ctx, h.consumerDB); err != nil {
		return nil, err
	}
	if err := createProducerTable(ctx, h.herald, cfg.Objects); err != nil {
		return nil, err
	}
	if h.listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("consumer: listen: %w", err)
	}
	key := secretbox.Generate()
	secret, err := createEndpoint(ctx, h.herald, key, "http://"+h.listener.Addr().String()+"/webhooks")
	if err != nil {
		return nil, err
	}
	if h.consumer, err = newConsumer(h.consumerDB, secret, cfg, h.logger); err != nil {
		return nil, err
	}
	h.producers = &producers{pool: h.herald, cfg: cfg}
	env := append(withoutHeraldEnv(os.Environ()), secretbox.EnvKey+"="+key)
	h.fleet = newFleet(setup.Dispatcher, dispatcherArgs(cfg, setup.HeraldURL), env, setup.LogDir, cfg.Dispatchers)
	return h, nil
}

// start serves the consumer's endpoint, runs its Workers and starts the
// dispatchers.
func (h *harness) start(ctx context.Context) error {
	h.server = &http.Server{Handler: h.consumer, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.server.Serve(h.listener) }()
	workerCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- h.consumer.run(workerCtx) }()
	h.stopConsumer = sync.OnceValue(func() error { cancel(); return <-done })
	for i := range h.cfg.Dispatchers {
		if err := h.fleet.start(i); err != nil {
			return err
		}
	}
	return nil
}

// stop stops the dispatchers with SIGTERM and the consumer, and notes in r
// what went wrong with them during the run.
func (h *harness) stop(r *Report) {
	if err := h.fleet.stop(); err != nil {
		r.problem("%v", err)
	}
	if err := h.stopConsumer(); err != nil {
		r.problem("consumer: %v", err)
	}
	h.fleet.mu.Lock()
	defer h.fleet.mu.Unlock()
	r.Kills = h.fleet.kills
	r.Restarts = h.fleet.starts - h.cfg.Dispatchers
	for _, u := range h.fleet.unexpected {
		r.problem("%s", u)
	}
	h.producers.mu.Lock()
	defer h.producers.mu.Unlock()
	r.ProducerRetries = h.producers.retries
}

// close releases whatever the run still holds.
func (h *harness) close() {
	if h.fleet != nil {
		h.fleet.killAll()
	}
	if h.stopConsumer != nil {
		_ = h.stopConsumer()
	}
	if h.server != nil {
		_ = h.server.Close()
	} else if h.listener != nil {
		_ = h.listener.Close()
	}
	if h.consumerDB != nil {
		h.consumerDB.Close()
	}
	if h.herald != nil {
		h.herald.Close()
	}
}

// createEndpoint creates the producer's tenant and its one endpoint at url
// and returns the endpoint's signing secret.
func createEndpoint(ctx context.Context, pool *pgxpool.Pool, key, url string) (signing.Secret, error) {
	box, err := secretbox.Parse(key)
	if err != nil {
		return signing.Secret{}, err
	}
	st, err := store.New(pool, store.Config{Box: box})
	if err != nil {
		return signing.Secret{}, err
	}
	if _, err := st.CreateTenant(ctx, store.NewTenant{ID: tenant}); err != nil {
		return signing.Secret{}, fmt.Errorf("create tenant: %w", err)
	}
	endpoint, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: url, Description: "chaos consumer"})
	if err != nil {
		return signing.Secret{}, fmt.Errorf("create endpoint: %w", err)
	}
	return st.RevealSecret(ctx, endpoint.ID)
}

// withoutHeraldEnv drops Herald's settings from env, so the dispatchers run
// with exactly the flags of the run.
func withoutHeraldEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "HERALD_") })
}
