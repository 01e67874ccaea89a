package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/migrations/producer"
	"github.com/heraldhq/herald/relay"
)

// sourceURLs is --source-database-url: name=URL, repeatable; one value
// may hold several separated by spaces (as HERALD_SOURCE_DATABASE_URLS
// does). Set keeps the text and parseSources reads it, so that an error
// never repeats a URL, which may hold a password (the flag package quotes
// the value Set refused).
type sourceURLs []string

// String names the sources only.
func (v *sourceURLs) String() string {
	names := make([]string, len(*v))
	for i, s := range *v {
		names[i], _, _ = strings.Cut(s, "=")
	}
	return strings.Join(names, " ")
}

func (v *sourceURLs) Set(value string) error {
	fields := strings.Fields(value)
	if len(fields) == 0 {
		fields = []string{""}
	}
	*v = append(*v, fields...)
	return nil
}

// parse reads every source, each error naming its position and
// what is wrong.
func (v sourceURLs) parse() ([]relay.SourceURL, error) {
	var (
		sources []relay.SourceURL
		errs    []error
		named   = map[string]bool{}
	)
	for i, text := range v {
		if text == "" {
			errs = append(errs, fmt.Errorf("--source-database-url #%d is empty; write name=URL, for example billing=postgres://postgres@127.0.0.1:5432/billing", i+1))
			continue
		}
		s, err := relay.ParseSourceURL(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("--source-database-url #%d: %w", i+1, err))
			continue
		}
		if named[s.Name] {
			errs = append(errs, fmt.Errorf("--source-database-url #%d: source %s is named twice; give each source a name of its own", i+1, s.Name))
			continue
		}
		named[s.Name] = true
		sources = append(sources, s)
	}
	return sources, errors.Join(errs...)
}

// openRelay opens every source of s, installing or checking the
// producer's outbox there as --migrate says, and returns the relay over
// them and a function that closes them. With no source it returns a nil
// relay: single-database mode.
func openRelay(ctx context.Context, s *settings, pool *pgxpool.Pool, logger *slog.Logger) (*relay.Relay, func(), error) {
	var pools []*pgxpool.Pool
	closeAll := func() {
		for _, p := range pools {
			p.Close()
		}
	}
	if len(s.parsedSources) == 0 {
		return nil, closeAll, nil
	}
	sources := make([]relay.Source, 0, len(s.parsedSources))
	for _, src := range s.parsedSources {
		p, err := openSource(ctx, s, src)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--source-database-url %s: %w", src.Name, err)
		}
		pools = append(pools, p)
		sources = append(sources, relay.Source{Name: src.Name, Pool: p})
	}
	r, err := relay.New(relay.Config{
		Pool:         pool,
		Sources:      sources,
		BatchSize:    s.batchSize,
		PollInterval: s.pollInterval,
		RelayedGrace: s.relayedGrace,
		Logger:       logger,
	})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return r, closeAll, nil
}

// openSource opens one source's pool and installs the producer's outbox
// (--migrate) or checks that it is installed.
func openSource(ctx context.Context, s *settings, src relay.SourceURL) (*pgxpool.Pool, error) {
	p, err := database.Open(ctx, src.URL, database.Options{MaxConns: relay.SourceMaxConns, QueryExecMode: relay.SourceQueryExecMode, CreateDatabase: s.db.Migrate, Timeouts: s.db.Timeouts})
	if err != nil {
		return nil, err
	}
	if s.db.Migrate {
		err = producer.Apply(ctx, p)
	} else {
		err = producer.Check(ctx, p)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// runDispatcher runs d and, in split mode, r beside it until ctx ends; r stops when
// d does.
func runDispatcher(ctx context.Context, d *dispatcher.Dispatcher, r *relay.Relay) error {
	if r == nil {
		return d.Run(ctx)
	}
	relayCtx, stopRelay := context.WithCancel(ctx)
	relayed := make(chan error, 1)
	go func() { relayed <- r.Run(relayCtx) }()
	err := d.Run(ctx)
	stopRelay()
	return errors.Join(err, <-relayed)
}
