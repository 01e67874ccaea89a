package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/blackhole"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/migrations/producer"
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
	// ProducerURL, when set, runs the run in split mode: an empty
	// database that becomes the producer's (its own table and the
	// producer's outbox, producer.Apply), which the producers publish to
	// and every dispatcher relays from (--source-database-url
	// chaos=ProducerURL), killed with it. Empty means single-database
	// mode: the producers publish in Herald's database.
	ProducerURL string
	// Dispatcher is the path of a cmd/dispatcher binary (see
	// BuildDispatcher). Required.
	Dispatcher string
	// Outage breaks the databases' connections once, halfway through. Nil
	// means no outage.
	Outage Outage
	// Self is the program Run starts as the consumer's worker process, with
	// ConsumerWorkerEnv set: a program whose main then calls
	// RunConsumerWorker (cmd/chaos, or a test binary's TestMain), usually
	// os.Executable(). Required.
	Self string
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
	if setup.HeraldURL == "" || setup.ConsumerURL == "" || setup.Dispatcher == "" || setup.LogDir == "" || setup.Self == "" {
		return nil, errors.New("chaos: Setup needs HeraldURL, ConsumerURL, Dispatcher, LogDir and Self")
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
	if err := runFaults(ctx, h, r); err != nil {
		cancel()
		<-producersDone
		return nil, err
	}
	if err := <-producersDone; err != nil {
		return nil, fmt.Errorf("chaos: producers: %w", err)
	}
	h.logger.Info("chaos: every event committed; waiting for the deliveries to settle")
	if err := settle(ctx, cfg, h.herald, h.source, h.consumerDB, h.logger); err != nil {
		r.problem("did not settle within %s: %v", cfg.Settle, err)
	}
	h.stop(r)
	if err := h.consumer.writeRequests(filepath.Join(setup.LogDir, "requests.tsv")); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if err := check(ctx, r, h); err != nil {
		return nil, err
	}
	r.Runtime = time.Since(started)
	return r, nil
}

// harness holds the parts of a run.
type harness struct {
	cfg    Config
	logger *slog.Logger
	herald *pgxpool.Pool
	// source is the producer's database in split mode, nil otherwise;
	// producerDB is where the producers publish and keep their table:
	// source, or herald.
	source     *pgxpool.Pool
	producerDB *pgxpool.Pool
	consumerDB *pgxpool.Pool
	consumer   *consumer
	worker     *workerProcess
	server     *http.Server
	listener   net.Listener
	producers  *producers
	fleet      *fleet
	operator   *operator
	outage     Outage
	// proxy stands between dispatcher blackHoled and Postgres; bound is
	// that dispatcher's dispatcher.RecoveryBound.
	proxy *blackhole.Proxy
	bound time.Duration
	// mainEndpoint, goneEndpoint and orderedEndpoint are the consumer's
	// endpoints.
	mainEndpoint, goneEndpoint, orderedEndpoint uuid.UUID
	started                                     time.Time
}

// prepare opens the databases, creates the producer's table, the tenant
// and its endpoints, the consumer listening at the endpoints' URLs, its
// worker process and the dispatchers, the first behind the black-hole
// proxy.
func prepare(ctx context.Context, cfg Config, setup Setup) (_ *harness, err error) {
	h := &harness{cfg: cfg, logger: cmp.Or(setup.Logger, slog.New(slog.DiscardHandler)), outage: setup.Outage, started: time.Now()}
	defer func() {
		if err != nil {
			h.close()
		}
	}()
	if h.herald, err = database.Open(ctx, setup.HeraldURL, database.Options{MaxConns: int32(cfg.Producers + 4)}); err != nil {
		return nil, err
	}
	if h.consumerDB, err = database.Open(ctx, setup.ConsumerURL, database.Options{MaxConns: consumerConns}); err != nil {
		return nil, err
	}
	if err := migrateConsumer(ctx, h.consumerDB); err != nil {
		return nil, err
	}
	h.producerDB = h.herald
	if setup.ProducerURL != "" {
		if h.source, err = database.Open(ctx, setup.ProducerURL, database.Options{MaxConns: int32(cfg.Producers + 2)}); err != nil {
			return nil, err
		}
		if err := producer.Apply(ctx, h.source); err != nil {
			return nil, fmt.Errorf("install the producer's outbox: %w", err)
		}
		h.producerDB = h.source
	}
	if err := createProducerTable(ctx, h.producerDB, cfg.Objects); err != nil {
		return nil, err
	}
	if h.listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("consumer: listen: %w", err)
	}
	key := secretbox.Generate()
	box, err := secretbox.Parse(key)
	if err != nil {
		return nil, err
	}
	st, err := store.New(h.herald, store.Config{Box: box})
	if err != nil {
		return nil, err
	}
	secrets, err := h.createEndpoints(ctx, st, "http://"+h.listener.Addr().String())
	if err != nil {
		return nil, err
	}
	if h.consumer, err = newConsumer(h.consumerDB, secrets, cfg, h.logger); err != nil {
		return nil, err
	}
	if h.worker, err = newWorkerProcess(setup.Self, cfg, setup.ConsumerURL, setup.LogDir, h.logger); err != nil {
		return nil, err
	}
	if h.operator, err = newOperator(h.herald, st); err != nil {
		return nil, err
	}
	h.producers = &producers{pool: h.producerDB, cfg: cfg}

	args := make([][]string, cfg.Dispatchers)
	for i := range args {
		args[i] = dispatcherArgs(cfg, setup.HeraldURL, setup.ProducerURL)
	}
	if cfg.BlackHole > 0 {
		if h.bound, err = recoveryBound(ctx, cfg, setup.HeraldURL); err != nil {
			return nil, err
		}
		u, err := url.Parse(setup.HeraldURL)
		if err != nil {
			return nil, fmt.Errorf("HeraldURL: %w", err)
		}
		if h.proxy, err = blackhole.Listen(u.Host); err != nil {
			return nil, fmt.Errorf("black-hole proxy: %w", err)
		}
		proxied, err := throughProxy(setup.HeraldURL, h.proxy)
		if err != nil {
			return nil, err
		}
		args[blackHoled] = dispatcherArgs(cfg, proxied, setup.ProducerURL)
	}
	env := append(withoutHeraldEnv(os.Environ()), secretbox.EnvKey+"="+key)
	h.fleet = newFleet(setup.Dispatcher, args, env, setup.LogDir)
	return h, nil
}

// start serves the consumer's endpoints, starts its worker process and
// the dispatchers.
func (h *harness) start(context.Context) error {
	h.server = &http.Server{Handler: h.consumer, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.server.Serve(h.listener) }()
	if err := h.worker.start(); err != nil {
		return err
	}
	for i := range h.cfg.Dispatchers {
		if err := h.fleet.start(i); err != nil {
			return err
		}
	}
	return nil
}

// stop stops the dispatchers with SIGTERM and the consumer's worker
// process, and notes in r what went wrong with them during the run.
func (h *harness) stop(r *Report) {
	if err := h.fleet.stop(); err != nil {
		r.problem("%v", err)
	}
	h.worker.stop()
	var unexpected []string
	r.WorkerCrashes, unexpected = h.worker.result()
	for _, u := range unexpected {
		r.problem("%s", u)
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
	if h.worker != nil {
		h.worker.kill()
	}
	if h.proxy != nil {
		_ = h.proxy.Close()
	}
	if h.server != nil {
		_ = h.server.Close()
	} else if h.listener != nil {
		_ = h.listener.Close()
	}
	if h.consumerDB != nil {
		h.consumerDB.Close()
	}
	if h.source != nil {
		h.source.Close()
	}
	if h.herald != nil {
		h.herald.Close()
	}
}

// createEndpoints creates the producer's tenant and the consumer's
// endpoints under base: mainPath for eventType and, when the run has
// them, gonePath for goneType and orderedPath (ordering object) for
// orderedType. It returns their signing secrets.
func (h *harness) createEndpoints(ctx context.Context, st *store.Store, base string) ([]signing.Secret, error) {
	if _, err := st.CreateTenant(ctx, store.NewTenant{ID: tenant}); err != nil {
		return nil, fmt.Errorf("create tenant: %w", err)
	}
	create := func(path, eventType string, ordering store.Ordering) (uuid.UUID, signing.Secret, error) {
		e, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: base + path, Description: "chaos consumer " + path, EventTypes: []string{eventType}, Ordering: ordering})
		if err != nil {
			return uuid.Nil, signing.Secret{}, fmt.Errorf("create endpoint %s: %w", path, err)
		}
		secret, err := st.RevealSecret(ctx, e.ID)
		return e.ID, secret, err
	}
	var secrets []signing.Secret
	id, secret, err := create(mainPath, eventType, store.OrderingNone)
	if err != nil {
		return nil, err
	}
	h.mainEndpoint, secrets = id, append(secrets, secret)
	if h.cfg.GoneShare > 0 {
		if id, secret, err = create(gonePath, goneType, store.OrderingNone); err != nil {
			return nil, err
		}
		h.goneEndpoint, secrets = id, append(secrets, secret)
	}
	if h.cfg.OrderedShare > 0 {
		if id, secret, err = create(orderedPath, orderedType, store.OrderingObject); err != nil {
			return nil, err
		}
		h.orderedEndpoint, secrets = id, append(secrets, secret)
	}
	return secrets, nil
}

// withoutHeraldEnv drops Herald's settings from env, so the dispatchers run
// with exactly the flags of the run.
func withoutHeraldEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "HERALD_") })
}
