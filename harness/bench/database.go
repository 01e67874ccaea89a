package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/migrations"
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
	pool     *pgxpool.Config
	admin    *pgx.ConnConfig
	template string
	built    bool
	// lock holds an advisory lock on the scratch database's name while the
	// bench uses it: a second bench on the same name would drop the first
	// one's database under it.
	lock *pgx.Conn
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
	admin := cfg.ConnConfig.Copy()
	admin.Database = "postgres"
	return &ScratchDatabases{url: url, pool: cfg, admin: admin, template: name + "_template"}, nil
}

// New drops the scratch database if it exists, clones the template into it
// and returns its URL and a function that drops it.
func (s *ScratchDatabases) New(ctx context.Context) (string, func() error, error) {
	if !s.built {
		if err := s.takeLock(ctx); err != nil {
			return "", nil, err
		}
		if err := s.buildTemplate(ctx); err != nil {
			return "", nil, err
		}
		s.built = true
	}
	name := s.pool.ConnConfig.Database
	if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", nil, fmt.Errorf("drop scratch database %s: %w", name, err)
	}
	if err := s.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{s.template}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create scratch database %s: %w", name, err)
	}
	drop := func() error {
		return s.exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
	return s.url, drop, nil
}

// Close drops the template and lets another bench use the name.
func (s *ScratchDatabases) Close(ctx context.Context) error {
	if s.lock != nil {
		defer s.lock.Close(context.WithoutCancel(ctx))
	}
	if !s.built {
		return nil
	}
	return s.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{s.template}.Sanitize()+" WITH (FORCE)")
}

// takeLock takes the advisory lock on the scratch database's name, or says
// that another bench holds it.
func (s *ScratchDatabases) takeLock(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.admin)
	if err != nil {
		return fmt.Errorf("connect to %s:%d/postgres: %w; %s", s.admin.Host, s.admin.Port, err, database.StartHint)
	}
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", "herald bench "+s.pool.ConnConfig.Database).Scan(&locked); err != nil {
		_ = conn.Close(ctx)
		return fmt.Errorf("lock scratch database: %w", err)
	}
	if !locked {
		_ = conn.Close(ctx)
		return fmt.Errorf("another bench is using scratch database %q; wait for it to finish or point --database-url at another one", s.pool.ConnConfig.Database)
	}
	s.lock = conn
	return nil
}

func (s *ScratchDatabases) buildTemplate(ctx context.Context) error {
	tmpl := pgx.Identifier{s.template}.Sanitize()
	if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+tmpl+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop old bench template: %w", err)
	}
	if err := s.exec(ctx, "CREATE DATABASE "+tmpl); err != nil {
		return fmt.Errorf("create bench template: %w", err)
	}
	cfg := s.pool.Copy()
	cfg.ConnConfig.Database = s.template
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open bench template: %w", err)
	}
	defer pool.Close()
	if err := migrations.Apply(ctx, pool); err != nil {
		return fmt.Errorf("migrate bench template: %w", err)
	}
	return nil
}

func (s *ScratchDatabases) exec(ctx context.Context, sql string) error {
	conn, err := pgx.ConnectConfig(ctx, s.admin)
	if err != nil {
		return fmt.Errorf("connect to %s:%d/postgres: %w; %s", s.admin.Host, s.admin.Port, err, database.StartHint)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}
