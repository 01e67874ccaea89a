package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/migrations"
)

// server makes and drops the run's databases on one Postgres server.
type server struct {
	admin   *pgx.ConnConfig // the server's "postgres" database
	version string
	created []string
}

func openServer(ctx context.Context, dsn string) (*server, error) {
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
	s := &server{admin: admin}
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&s.version); err != nil {
		return nil, fmt.Errorf("read the Postgres version: %w", err)
	}
	return s, nil
}

func (s *server) adminURL() string { return connString(s.admin) }

// newDatabase creates an empty database named chaos_<name>_<random> and
// returns its URL; with migrate, Herald's migrations are applied to it.
func (s *server) newDatabase(ctx context.Context, name string, migrate bool) (string, error) {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	full := "chaos_" + name + "_" + hex.EncodeToString(suffix)
	if err := s.exec(ctx, "CREATE DATABASE "+pgx.Identifier{full}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", full, err)
	}
	s.created = append(s.created, full)
	cfg := s.admin.Copy()
	cfg.Database = full
	dsn := connString(cfg)
	if !migrate {
		return dsn, nil
	}
	pool, err := database.Open(ctx, dsn, database.Options{MaxConns: 2})
	if err != nil {
		return "", err
	}
	defer pool.Close()
	if err := migrations.Apply(ctx, pool); err != nil {
		return "", fmt.Errorf("migrate %s: %w", full, err)
	}
	return dsn, nil
}

// dropAll drops every database newDatabase made.
func (s *server) dropAll(ctx context.Context) error {
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

// environment describes where the run happened, for the output's header.
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
