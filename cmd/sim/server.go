package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/database"
)

// server makes and drops the simulation's databases on one Postgres server.
type server struct {
	admin   *pgx.ConnConfig // the server's "postgres" database
	prefix  string          // starts the name of every database made
	version string

	mu      sync.Mutex // CREATE and DROP one at a time; the list below
	created []string
}

func openServer(ctx context.Context, dsn, prefix string) (*server, error) {
	cfg, err := database.ParseURL(dsn)
	if err != nil {
		return nil, err
	}
	admin := cfg.ConnConfig.Copy()
	admin.Database = "postgres"
	pool, err := database.Open(ctx, connString(admin), database.Options{MaxConns: 1})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	s := &server{admin: admin, prefix: prefix}
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&s.version); err != nil {
		return nil, fmt.Errorf("read the Postgres version: %w", err)
	}
	return s, nil
}

// newDatabase replaces any database left by an interrupted run under the
// same name with an empty one and returns its URL.
func (s *server) newDatabase(ctx context.Context, name string) (string, error) {
	full := s.prefix + name
	s.mu.Lock()
	defer s.mu.Unlock()
	ident := pgx.Identifier{full}.Sanitize()
	if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("drop leftover database %s: %w", full, err)
	}
	if err := s.exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", fmt.Errorf("create database %s: %w", full, err)
	}
	s.created = append(s.created, full)
	cfg := s.admin.Copy()
	cfg.Database = full
	return connString(cfg), nil
}

// dropAll drops every database newDatabase made.
func (s *server) dropAll(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, name := range s.created {
		if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("drop database %s: %w", name, err))
		}
	}
	s.created = nil
	return errors.Join(errs...)
}

func (s *server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.ConnectConfig(ctx, s.admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

func connString(cfg *pgx.ConnConfig) string {
	u := url.URL{Scheme: "postgres", Host: fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), Path: "/" + cfg.Database, RawQuery: "sslmode=disable"}
	if cfg.Password != "" {
		u.User = url.UserPassword(cfg.User, cfg.Password)
	} else {
		u.User = url.User(cfg.User)
	}
	return u.String()
}

// environment describes where the run happened, for the report's header.
func environment(postgres string) []string {
	machine := fmt.Sprintf("%d CPUs, %s/%s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	if model := cpuModel(); model != "" {
		machine = model + ", " + machine
	}
	return []string{
		"go: " + runtime.Version(),
		"postgres: " + postgres,
		"machine: " + machine,
		"run date: " + time.Now().UTC().Format(time.DateOnly),
	}
}

// cpuModel reads the processor's name on Linux; elsewhere it is empty.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, value, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}
