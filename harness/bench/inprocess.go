package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/store"
)

// InProcessOptions tune the dispatcher InProcess runs. Zero values mean
// the dispatcher's defaults.
type InProcessOptions struct {
	// Workers is the number of attempts run at once.
	Workers int
	// MaxConns caps the dispatcher's connection pool. Defaults to
	// dispatcher.DefaultMaxConns, as cmd/dispatcher.
	MaxConns int
	// Timeout bounds one HTTP attempt.
	Timeout time.Duration
	// Policy is the retry schedule.
	Policy schedule.Policy
	// Logger receives the dispatcher's logs. Nil means warnings and errors
	// only, to the default logger's handler.
	Logger *slog.Logger
}

// InProcess returns a StartDispatcher that runs Herald's dispatcher in this
// process, set up as cmd/dispatcher sets it up: secrets from the store,
// deliveries through the SSRF guard's transport allowing LoopbackCIDR. Its
// usage is the whole process's (CPU time since it started, RSS high-water
// mark since then), producers and receivers included. With a source, a
// relay from it runs beside the dispatcher, as cmd/dispatcher runs one.
func InProcess(opts InProcessOptions) StartDispatcher {
	return func(ctx context.Context, url, secretKey, source string) (RunningDispatcher, error) {
		box, err := secretbox.Parse(secretKey)
		if err != nil {
			return nil, err
		}
		pool, err := database.Open(ctx, url, database.Options{MaxConns: int32(cmp.Or(opts.MaxConns, dispatcher.DefaultMaxConns))})
		if err != nil {
			return nil, err
		}
		release := pool.Close
		secrets, err := store.New(pool, store.Config{Box: box})
		if err != nil {
			release()
			return nil, err
		}
		logger := cmp.Or(opts.Logger, slog.New(warnings{slog.Default().Handler()}))
		var rel *relay.Relay
		if source != "" {
			sourcePool, err := database.Open(ctx, source, database.Options{MaxConns: relay.SourceMaxConns, QueryExecMode: relay.SourceQueryExecMode})
			if err != nil {
				release()
				return nil, err
			}
			release = func() { pool.Close(); sourcePool.Close() }
			rel, err = relay.New(relay.Config{Pool: pool, Sources: []relay.Source{{Name: SourceName, Pool: sourcePool}}, Logger: logger})
			if err != nil {
				release()
				return nil, err
			}
		}
		guard := ssrf.New(netip.MustParsePrefix(LoopbackCIDR))
		d, err := dispatcher.New(dispatcher.Config{
			Pool:    pool,
			Workers: opts.Workers,
			Delivery: delivery.Config{
				Secrets:   secrets,
				Policy:    opts.Policy,
				Timeout:   opts.Timeout,
				Transport: guard.Transport(),
			},
			Logger: logger,
		})
		if err != nil {
			release()
			return nil, err
		}
		if err := resetPeakRSS(); err != nil {
			release()
			return nil, fmt.Errorf("reset peak RSS: %w", err)
		}
		before, err := selfUsage()
		if err != nil {
			release()
			return nil, err
		}
		runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		p := &inProcess{before: before, cancel: cancel, release: release, done: make(chan struct{})}
		go func() {
			defer close(p.done)
			if rel == nil {
				p.runErr = d.Run(runCtx)
				return
			}
			relayCtx, stopRelay := context.WithCancel(runCtx)
			relayed := make(chan error, 1)
			go func() { relayed <- rel.Run(relayCtx) }()
			err := d.Run(runCtx)
			stopRelay()
			p.runErr = errors.Join(err, <-relayed)
		}()
		// As ProcessDispatcher, once it takes jobs.
		select {
		case <-d.Ready():
			return p, nil
		case <-p.done:
			release()
			return nil, fmt.Errorf("dispatcher stopped before it was ready: %w", p.runErr)
		}
	}
}

// warnings passes on records of level Warn and above.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

type inProcess struct {
	before   Usage
	cancel   context.CancelFunc
	release  func()
	done     chan struct{}
	runErr   error
	stopOnce sync.Once
}

func (d *inProcess) Usage() (Usage, error) {
	u, err := selfUsage()
	if err != nil {
		return Usage{}, err
	}
	u.CPU -= d.before.CPU
	return u, nil
}

func (d *inProcess) Stop(ctx context.Context) (Usage, error) {
	d.stopOnce.Do(d.cancel)
	select {
	case <-d.done:
	case <-ctx.Done():
		return Usage{}, ctx.Err()
	}
	u, err := d.Usage()
	d.release()
	if d.runErr != nil {
		return Usage{}, fmt.Errorf("dispatcher: %w", d.runErr)
	}
	return u, err
}
