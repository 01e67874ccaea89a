// Package scratchdb makes throwaway Postgres databases and drops them: empty,
// migrated, or cloned from a migrated template with CREATE DATABASE …
// TEMPLATE, which takes milliseconds where migrating takes a second or more.
// internal/pgtest gives every test one; the bench, chaos and sim harnesses
// give every run or scenario theirs.
//
// A Server works through the server's "postgres" database, because CREATE
// DATABASE and DROP DATABASE cannot run inside the database they name. It
// holds no connection between calls (a Lock holds one of its own), so it
// outlives a restart of the server.
//
// A database made under a name that is taken replaces the one there, so a
// run interrupted before it dropped its databases is never in the way of
// the next. Two processes that could pick the same name take an advisory
// lock on it first (Lock, TryLock).
package scratchdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
)

// Migrate builds a schema in an empty database; migrations.Apply is one.
type Migrate func(ctx context.Context, pool *pgxpool.Pool) error

// Template is a migrated database that Clone copies.
type Template struct {
	// Name identifies the template; letters, digits and underscores.
	Name string
	// Fingerprint changes whenever Migrate would build a different schema,
	// so a stale template is never reused.
	Fingerprint string
	// Migrate builds the schema in an empty database.
	Migrate Migrate
}

// templateBuildTimeout bounds a template's migration, which runs while
// every other process that wants the template waits on its lock. Filling
// the history-plan template (200,000 deliveries) took 1.5 minutes on two
// cores shared with other test runs; 2 minutes cut it short.
const templateBuildTimeout = 10 * time.Minute

// migrateConns is the pool a migration gets: migrations.Apply holds its
// advisory lock on one connection and migrates on another.
const migrateConns = 4

// ErrLocked is TryLock's answer when another session holds the lock.
var ErrLocked = errors.New("the name is locked by another session")

// Server makes and drops databases on one Postgres server, and remembers
// the ones it made so that DropAll can drop them. It is safe for concurrent
// use.
type Server struct {
	admin   *pgx.ConnConfig // the server's "postgres" database
	version string

	mu      sync.Mutex // guards created
	created []string

	templateMu sync.Mutex // one template check or build at a time
	templates  map[string]bool
}

// Open checks url, connects to the server it names (its database part is
// ignored) and returns the Server. An unreachable server is reported in one
// line that says how to start one, as Herald's programs report it.
func Open(ctx context.Context, url string) (*Server, error) {
	cfg, err := database.ParseURL(url)
	if err != nil {
		return nil, err
	}
	s := &Server{admin: cfg.ConnConfig.Copy(), templates: map[string]bool{}}
	s.admin.Database = "postgres"
	pool, err := database.Open(ctx, s.AdminURL(), database.Options{MaxConns: 1})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&s.version); err != nil {
		return nil, fmt.Errorf("read the Postgres version: %w", err)
	}
	return s, nil
}

// Version is the server's version, as SHOW server_version says it.
func (s *Server) Version() string { return s.version }

// Addr is the server's host:port, which names it without its
// credentials.
func (s *Server) Addr() string {
	return net.JoinHostPort(s.admin.Host, strconv.Itoa(int(s.admin.Port)))
}

// AdminURL is the URL of the server's "postgres" database, which the
// Server works through and never makes or drops.
func (s *Server) AdminURL() string { return s.URL("postgres") }

// URL returns the URL of the database called name on the server.
func (s *Server) URL(name string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(s.admin.User),
		Host:     s.Addr(),
		Path:     "/" + name,
		RawQuery: "sslmode=disable",
	}
	if s.admin.Password != "" {
		u.User = url.UserPassword(s.admin.User, s.admin.Password)
	}
	return u.String()
}

// Create makes an empty database called name, replacing any database of
// that name, and returns its URL. Unless migrate is nil it then runs
// migrate in it.
func (s *Server) Create(ctx context.Context, name string, migrate Migrate) (string, error) {
	if err := s.replace(ctx, name, "CREATE DATABASE "+ident(name)); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	s.remember(name)
	if migrate != nil {
		if err := s.migrate(ctx, name, migrate); err != nil {
			return "", fmt.Errorf("migrate %s: %w", name, err)
		}
	}
	return s.URL(name), nil
}

// Clone makes database name a copy of database template, replacing any
// database called name, and returns its URL. Nobody may be connected to
// template meanwhile.
func (s *Server) Clone(ctx context.Context, name, template string) (string, error) {
	if err := s.replace(ctx, name, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(template)); err != nil {
		return "", fmt.Errorf("create database %s from %s: %w", name, template, err)
	}
	s.remember(name)
	return s.URL(name), nil
}

// Drop drops database name if it exists, terminating the connections still
// open to it.
func (s *Server) Drop(ctx context.Context, name string) error {
	if err := s.exec(ctx, dropSQL(name)); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = slices.DeleteFunc(s.created, func(c string) bool { return c == name })
	return nil
}

// DropAll drops every database Create and Clone made that is not dropped
// yet, and reports the ones it could not drop.
func (s *Server) DropAll(ctx context.Context) error {
	var errs []error
	for _, name := range s.Created() {
		errs = append(errs, s.Drop(ctx, name))
	}
	return errors.Join(errs...)
}

// Created returns the names of the databases Create and Clone made that are
// not dropped yet, oldest first.
func (s *Server) Created() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.created)
}

// Template returns the name of tmpl's database, herald_tmpl_<Name>_<Fingerprint>,
// building it first when the server does not have it yet. Test binaries of
// several packages ask at once, so the check and the build happen under an
// advisory lock on the name, and the build happens under a temporary name
// that is renamed only when Migrate succeeded: nobody ever clones a
// half-built template. The template stays on the server for later runs; a
// new fingerprint gets a new one.
func (s *Server) Template(ctx context.Context, tmpl Template) (string, error) {
	name := fmt.Sprintf("herald_tmpl_%s_%s", tmpl.Name, tmpl.Fingerprint)
	s.templateMu.Lock()
	defer s.templateMu.Unlock()
	if s.templates[name] {
		return name, nil
	}
	lock, err := s.Lock(ctx, name)
	if err != nil {
		return "", err
	}
	defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }()
	exists, err := s.exists(ctx, name)
	if err != nil {
		return "", err
	}
	if !exists {
		if err := s.buildTemplate(ctx, name, tmpl.Migrate); err != nil {
			return "", err
		}
	}
	s.templates[name] = true
	return name, nil
}

func (s *Server) buildTemplate(ctx context.Context, name string, migrate Migrate) error {
	building := name + "_building"
	if err := s.replace(ctx, building, "CREATE DATABASE "+ident(building)); err != nil {
		return fmt.Errorf("create database %s: %w", building, err)
	}
	migrateCtx, cancel := context.WithTimeout(ctx, templateBuildTimeout)
	defer cancel()
	if err := s.migrate(migrateCtx, building, migrate); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return s.exec(ctx, "ALTER DATABASE "+ident(building)+" RENAME TO "+ident(name))
}

// Lock is an advisory lock on a name, held on a connection of its own
// until Release. Locks live in the server's "postgres" database, so every
// process that works on the server sees them.
type Lock struct {
	conn *pgx.Conn
}

// Lock takes the advisory lock on name, waiting while another session
// holds it.
func (s *Server) Lock(ctx context.Context, name string) (*Lock, error) {
	return s.lock(ctx, name, "SELECT true FROM pg_advisory_lock($1)")
}

// TryLock takes the advisory lock on name, or returns ErrLocked at once
// when another session holds it.
func (s *Server) TryLock(ctx context.Context, name string) (*Lock, error) {
	return s.lock(ctx, name, "SELECT pg_try_advisory_lock($1)")
}

func (s *Server) lock(ctx context.Context, name, sql string) (*Lock, error) {
	conn, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	var locked bool
	if err := conn.QueryRow(ctx, sql, lockKey(name)).Scan(&locked); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if !locked {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lock %s: %w", name, ErrLocked)
	}
	return &Lock{conn: conn}, nil
}

// Release lets other sessions take the lock: it closes the connection that
// holds it.
func (l *Lock) Release(ctx context.Context) error {
	return l.conn.Close(ctx)
}

// UniqueName returns prefix followed by 16 random hexadecimal digits, a
// name no other run picks.
func UniqueName(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// lockKey turns a name into an advisory lock key.
func lockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}

func (s *Server) remember(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.created, name) {
		s.created = append(s.created, name)
	}
}

// replace drops database name if it exists and runs create, on one
// connection.
func (s *Server) replace(ctx context.Context, name, create string) error {
	return s.exec(ctx, dropSQL(name), create)
}

func (s *Server) exists(ctx context.Context, name string) (bool, error) {
	conn, err := s.connect(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	return exists, err
}

func (s *Server) migrate(ctx context.Context, name string, migrate Migrate) error {
	pool, err := database.Open(ctx, s.URL(name), database.Options{MaxConns: migrateConns})
	if err != nil {
		return err
	}
	defer pool.Close()
	return migrate(ctx, pool)
}

// exec runs statements one after the other on one connection to the
// "postgres" database.
func (s *Server) exec(ctx context.Context, statements ...string) error {
	conn, err := s.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, sql := range statements {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.admin)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", s.Addr(), err)
	}
	return conn, nil
}

func dropSQL(name string) string {
	return "DROP DATABASE IF EXISTS " + ident(name) + " WITH (FORCE)"
}

func ident(name string) string {
	return pgx.Identifier{name}.Sanitize()
}
