package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of [HeartbeatConfig].
const (
	// DefaultHeartbeatInterval is how often a replica refreshes its row and
	// recounts the live replicas.
	DefaultHeartbeatInterval = 5 * time.Second
	// DefaultHeartbeatExpiry is how old a row may be before its replica
	// counts as gone.
	DefaultHeartbeatExpiry = 20 * time.Second
)

// HeartbeatConfig tunes a [Heartbeat]. The zero value is ready to use.
type HeartbeatConfig struct {
	// Interval between beats. Defaults to 5 s. Zero means the default.
	Interval time.Duration
	// Expiry after which a replica that stopped beating no longer counts.
	// Defaults to 20 s. Zero means the default; it is raised to at least
	// twice Interval so that a live replica never expires between beats.
	Expiry time.Duration
	// Logger receives failed beats. Defaults to slog.Default().
	Logger *slog.Logger
}

// Heartbeat registers this dispatcher in the herald.dispatchers table and
// counts the live ones. All times are the database's, so replicas on hosts
// with skewed clocks agree.
type Heartbeat struct {
	pool     *pgxpool.Pool
	id       uuid.UUID
	interval time.Duration
	expiry   time.Duration
	logger   *slog.Logger
	count    atomic.Int64
}

// NewHeartbeat returns a heartbeat for this process. It counts one replica
// (itself) until the first beat.
func NewHeartbeat(pool *pgxpool.Pool, cfg HeartbeatConfig) *Heartbeat {
	interval := cfg.Interval
	if interval <= 0 {
		interval = DefaultHeartbeatInterval
	}
	expiry := cfg.Expiry
	if expiry <= 0 {
		expiry = DefaultHeartbeatExpiry
	}
	expiry = max(expiry, 2*interval)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	h := &Heartbeat{pool: pool, id: uuid.Must(uuid.NewV7()), interval: interval, expiry: expiry, logger: logger}
	h.count.Store(1)
	return h
}

// ID identifies this replica in herald.dispatchers.
func (h *Heartbeat) ID() uuid.UUID { return h.id }

// Replicas returns the number of live dispatchers seen at the last beat,
// this one included; at least 1.
func (h *Heartbeat) Replicas() int { return int(h.count.Load()) }

// Beat refreshes this replica's row, removes expired ones and recounts.
func (h *Heartbeat) Beat(ctx context.Context) error {
	hostname, _ := os.Hostname()
	var live int64
	err := h.pool.QueryRow(ctx, beatQuery, h.id, hostname, h.expiry).Scan(&live)
	if err != nil {
		return fmt.Errorf("dispatcher heartbeat: %w", err)
	}
	h.count.Store(max(live, 1))
	return nil
}

// Run beats every interval until ctx ends, then removes this replica's row
// so the others take over its share at once. A failed beat is logged and
// the last count kept.
func (h *Heartbeat) Run(ctx context.Context) {
	defer h.leave(context.WithoutCancel(ctx))
	ticker := time.NewTicker(h.interval)
	defer ticker.Stop()
	for {
		if err := h.Beat(ctx); err != nil && ctx.Err() == nil {
			h.logger.WarnContext(ctx, "dispatcher heartbeat failed; keeping the last replica count", "error", err, "replicas", h.Replicas())
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (h *Heartbeat) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := h.pool.Exec(ctx, leaveQuery, h.id); err != nil {
		h.logger.WarnContext(ctx, "dispatcher heartbeat: could not remove this replica; it expires by itself", "error", err, "expiry", h.expiry)
	}
}
