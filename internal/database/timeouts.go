package database

import (
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of [Timeouts].
const (
	// DefaultConnectTimeout bounds opening one connection: TCP, TLS and
	// Postgres's start-up.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultStatementTimeout is a minute: as long as River lets the
	// longest statement it runs take (a reindex, River's
	// ReindexerTimeout). Herald's own statements take milliseconds.
	DefaultStatementTimeout = time.Minute
	// DefaultIdleInTransactionTimeout is 30 s. Between the statements of
	// a transaction Herald waits on nothing but Postgres, so a session
	// idle that long inside one belongs to a client that is gone or
	// stalled, and its locks (claimed messages, delivery and endpoint
	// rows) hold every other dispatcher back until Postgres ends it.
	DefaultIdleInTransactionTimeout = 30 * time.Second
	// DefaultPingTimeout is 2 s: an empty query that a server able to
	// work answers in milliseconds.
	DefaultPingTimeout = 2 * time.Second
	// DefaultKeepAlive is the idle time before TCP's first keepalive probe
	// and the time between probes.
	DefaultKeepAlive = 10 * time.Second
	// DefaultTCPUserTimeout is how long sent data may stay unacknowledged,
	// or keepalive probes unanswered, before the kernel drops the
	// connection (Linux's TCP_USER_TIMEOUT): 20 s, so a dead peer is
	// noticed within 20 s whether the connection was busy or idle.
	DefaultTCPUserTimeout = 20 * time.Second
)

// keepAliveProbes is how many unanswered keepalive probes drop a
// connection where TCP_USER_TIMEOUT does not exist (off Linux): an idle
// connection to a dead peer then lasts KeepAlive × (1 + keepAliveProbes).
const keepAliveProbes = 3

// Timeouts bound the waits of a pool's connections, so that a dead
// server, or a dead network path to it, becomes an error in bounded time
// instead of a hang. The zero value is the defaults; for every field zero
// means the default and negative means none.
//
// The kernel notices a peer that stopped acknowledging (KeepAlive,
// TCPUser) for every connection at once. It cannot notice a path that
// acknowledges and never answers, such as a proxy (pgbouncer, a cloud SQL
// proxy) whose backend died: only a deadline does, the caller's
// context's for a connection in use, Ping for one taken from the pool.
// Statement and IdleInTransaction are Postgres's: they end statements
// and sessions on the server, so that a stalled client does not hold its
// locks there.
type Timeouts struct {
	// Connect bounds opening one connection. Defaults to
	// DefaultConnectTimeout (10 s). A positive connect_timeout in the URL
	// (or PGCONNECT_TIMEOUT) wins.
	Connect time.Duration
	// Statement is Postgres's statement_timeout for the pool's sessions.
	// Defaults to DefaultStatementTimeout (1 min). A statement_timeout in
	// the URL, as a parameter or in its options, wins; Herald's overrides
	// one set by ALTER ROLE or ALTER DATABASE, so set it negative to leave
	// those in charge.
	Statement time.Duration
	// IdleInTransaction is Postgres's idle_in_transaction_session_timeout:
	// a session whose open transaction waited that long for its next
	// statement is ended and its locks released. Defaults to
	// DefaultIdleInTransactionTimeout (30 s). The URL's setting wins, as
	// for Statement.
	IdleInTransaction time.Duration
	// Ping bounds the ping that checks a connection taken from the pool
	// after a second or more idle (pgxpool's PingTimeout). One that does
	// not answer in time is dropped and the next tried, so that a caller
	// does not spend its whole deadline on one dead connection: after a
	// failover each of the pool's dead connections costs Ping once.
	// Defaults to DefaultPingTimeout (2 s). A positive pool_ping_timeout
	// in the URL wins.
	Ping time.Duration
	// KeepAlive is the idle time before TCP's first keepalive probe and
	// the time between probes. Defaults to DefaultKeepAlive (10 s).
	KeepAlive time.Duration
	// TCPUser is TCP_USER_TIMEOUT, on Linux only: how long sent data may
	// stay unacknowledged, or keepalive probes unanswered, before the
	// kernel drops the connection. Defaults to DefaultTCPUserTimeout
	// (20 s). Elsewhere an idle connection to a dead peer is dropped
	// after three unanswered probes.
	TCPUser time.Duration
}

// apply sets t on cfg, except where the URL set the same.
func (t Timeouts) apply(cfg *pgxpool.Config) {
	conn := &cfg.ConnConfig.Config
	connect := orDefault(t.Connect, DefaultConnectTimeout)
	if conn.ConnectTimeout > 0 {
		connect = conn.ConnectTimeout
	}
	conn.ConnectTimeout = connect
	conn.DialFunc = dialer(connect, orDefault(t.KeepAlive, DefaultKeepAlive), orDefault(t.TCPUser, DefaultTCPUserTimeout)).DialContext

	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = orDefault(t.Ping, DefaultPingTimeout)
	}

	settings := []struct {
		name  string
		value time.Duration
	}{
		{"statement_timeout", orDefault(t.Statement, DefaultStatementTimeout)},
		{"idle_in_transaction_session_timeout", orDefault(t.IdleInTransaction, DefaultIdleInTransactionTimeout)},
	}
	for _, s := range settings {
		if s.value > 0 && !urlSets(conn, s.name) {
			conn.RuntimeParams[s.name] = postgresDuration(s.value)
		}
	}
}

// BrokenCloseTimeout bounds closing a connection that broke (its query
// was interrupted, its peer went silent): a dead connection holds its
// place in the pool that long after it was found dead (see closeWithin).
const BrokenCloseTimeout = 2 * time.Second

// closeWithin returns a pgxpool BeforeClose hook that closes the socket of
// a connection whose closing has taken d. pgx closes a broken connection
// in the background, draining what the server still sends for up to 15 s
// so that the close is orderly, and pgxpool holds the connection's place
// in the pool until it is done. On a connection whose peer went silent
// nothing ever comes: after a failover the dead connections would keep
// the pool from opening new ones for 15 s. A server that is alive sends
// what is left within milliseconds.
func closeWithin(d time.Duration) func(*pgx.Conn) {
	return func(conn *pgx.Conn) {
		pg := conn.PgConn()
		go func() {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-pg.CleanupDone():
			case <-t.C:
				_ = pg.Conn().Close()
			}
		}()
	}
}

// orDefault resolves a Timeouts field: zero is def, negative is none (0).
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// urlSets says whether the URL (or the PG* environment) sets a server
// setting, as a parameter of its own or in its options
// ("-c name=value", "--name=value").
func urlSets(cfg *pgconn.Config, name string) bool {
	if _, ok := cfg.RuntimeParams[name]; ok {
		return true
	}
	fields := strings.Fields(cfg.RuntimeParams["options"])
	for i, f := range fields {
		var setting string
		switch {
		case f == "-c" && i+1 < len(fields):
			setting = fields[i+1]
		case strings.HasPrefix(f, "--"), strings.HasPrefix(f, "-c"):
			setting = f[2:]
		}
		if k, _, ok := strings.Cut(setting, "="); ok && strings.ReplaceAll(k, "-", "_") == name {
			return true
		}
	}
	return false
}

// postgresDuration writes d as a Postgres time setting, in whole
// milliseconds, rounded up so that a positive d never becomes 0 (none).
func postgresDuration(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10) + "ms"
}
