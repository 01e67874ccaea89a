package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/scratchdb"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/migrations/producer"
)

// DefaultDatabaseURL is where the bench works unless told otherwise: a
// scratch database on the local server.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/herald_bench?sslmode=disable"

// ScratchDatabases gives every scenario a fresh migrated database: it
// migrates a template once and clones it (CREATE DATABASE … TEMPLATE) for
// each scenario, dropping the previous clone. The database's name must
// contain "bench", because it is dropped and recreated.
type ScratchDatabases struct {
	url      string
	name     string
	template string
	server   *scratchdb.Server // nil until the first New
	// producerURL names the server NewProducer works on (SetProducerServer);
	// empty means server. producerServer is nil until the first
	// NewProducer there.
	producerURL    string
	producerServer *scratchdb.Server
	// lock holds an advisory lock on the scratch database's name while the
	// bench uses it: a second bench on the same name would drop the first
	// one's database under it.
	lock *scratchdb.Lock
}

// NewScratchDatabases checks url; nothing is created until the first New.
func NewScratchDatabases(url string) (*ScratchDatabases, error) {
	cfg, err := database.ParseURL(url)
	if err != nil {
		return nil, err
	}
	name := cfg.ConnConfig.Database
	if !strings.Contains(name, "bench") {
		return nil, fmt.Errorf("the bench drops and recreates database %q for every scenario; point --database-url at a scratch database whose name contains \"bench\", e.g. %s", name, DefaultDatabaseURL)
	}
	return &ScratchDatabases{url: url, name: name, template: name + "_template"}, nil
}

// New replaces the scratch database with a clone of the template and
// returns its URL and a function that drops it.
func (s *ScratchDatabases) New(ctx context.Context) (string, func() error, error) {
	if s.server == nil {
		if err := s.start(ctx); err != nil {
			return "", nil, err
		}
	}
	if _, err := s.server.Clone(ctx, s.name, s.template); err != nil {
		return "", nil, fmt.Errorf("scratch database: %w", err)
	}
	drop := func() error { return s.server.Drop(context.WithoutCancel(ctx), s.name) }
	return s.url, drop, nil
}

// SetProducerServer makes NewProducer work on the server url names (its
// database part is only used to connect) instead of the scratch
// database's: split mode as deployed, the producer's database on a server
// of its own, with its own WAL, locks and notification queue.
func (s *ScratchDatabases) SetProducerServer(url string) error {
	if _, err := database.ParseURL(url); err != nil {
		return fmt.Errorf("producer server: %w", err)
	}
	s.producerURL = url
	return nil
}

// ProducerServerAddr is the host:port of the server SetProducerServer
// named, once NewProducer has made a database there; empty otherwise.
func (s *ScratchDatabases) ProducerServerAddr() string {
	if s.producerServer == nil {
		return ""
	}
	return s.producerServer.Addr()
}

// Close drops the template, and the producer database if it is on a
// server of its own, and lets another bench use the name.
func (s *ScratchDatabases) Close(ctx context.Context) error {
	var err error
	if s.producerServer != nil {
		err = s.producerServer.DropAll(ctx)
	}
	if s.server == nil {
		return err
	}
	defer func() { _ = s.lock.Release(context.WithoutCancel(ctx)) }()
	return errors.Join(err, s.server.DropAll(ctx))
}

// start takes the advisory lock on the scratch database's name, or says
// that another bench holds it, and builds the template.
func (s *ScratchDatabases) start(ctx context.Context) error {
	server, err := scratchdb.Open(ctx, s.url)
	if err != nil {
		return err
	}
	lock, err := server.TryLock(ctx, s.name)
	if errors.Is(err, scratchdb.ErrLocked) {
		return fmt.Errorf("another bench is using scratch database %q; wait for it to finish or point --database-url at another one", s.name)
	}
	if err != nil {
		return fmt.Errorf("lock scratch database: %w", err)
	}
	if _, err := server.Create(ctx, s.template, migrations.Apply); err != nil {
		_ = server.DropAll(context.WithoutCancel(ctx))
		_ = lock.Release(context.WithoutCancel(ctx))
		return fmt.Errorf("bench template: %w", err)
	}
	s.server, s.lock = server, lock
	return nil
}

// NewProducer makes the split scenarios' producer database: the producer's
// outbox alone (producer.Apply), under the scratch database's name with
// "_producer" appended, on the scratch database's server or the one
// SetProducerServer named. It returns its URL and a function that drops
// it; Close drops it too.
func (s *ScratchDatabases) NewProducer(ctx context.Context) (string, func() error, error) {
	if s.server == nil {
		if err := s.start(ctx); err != nil {
			return "", nil, err
		}
	}
	server := s.server
	if s.producerURL != "" {
		if s.producerServer == nil {
			other, err := scratchdb.Open(ctx, s.producerURL)
			if err != nil {
				return "", nil, fmt.Errorf("producer server: %w", err)
			}
			s.producerServer = other
		}
		server = s.producerServer
	}
	name := s.name + "_producer"
	url, err := server.Create(ctx, name, producer.Apply)
	if err != nil {
		return "", nil, fmt.Errorf("producer database: %w", err)
	}
	return url, func() error { return server.Drop(context.WithoutCancel(ctx), name) }, nil
}

// NewFilled makes the aged scenario's database for age: migrated, then
// filled by fill, under the scratch database's name with the age appended.
// It returns the function that hands it out, once, as New does; dropping
// it is up to the caller's drop or Close. It is built in place rather than
// cloned: a clone of a database of millions of rows would copy them again.
func (s *ScratchDatabases) NewFilled(ctx context.Context, age string, fill func(context.Context, *pgxpool.Pool) error) (func(context.Context) (string, func() error, error), error) {
	if s.server == nil {
		if err := s.start(ctx); err != nil {
			return nil, err
		}
	}
	name := s.name + "_" + age
	url, err := s.server.Create(ctx, name, func(ctx context.Context, pool *pgxpool.Pool) error {
		if err := migrations.Apply(ctx, pool); err != nil {
			return err
		}
		return fill(ctx, pool)
	})
	if err != nil {
		return nil, fmt.Errorf("%s database: %w", age, err)
	}
	handed := false
	return func(ctx context.Context) (string, func() error, error) {
		if handed {
			return "", nil, fmt.Errorf("the %s database was handed out already", age)
		}
		handed = true
		return url, func() error { return s.server.Drop(context.WithoutCancel(ctx), name) }, nil
	}, nil
}
