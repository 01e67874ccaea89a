package dispatcher

import (
	"context"
	"strconv"
	"time"

	"github.com/heraldhq/herald/outbox"
)

// One dispatcher at a time fans out: the fan-out leader, the one whose
// connection holds the session-level advisory lock leaderLockKey. Only the
// leader LISTENs for publishes and drains the outbox; the others work
// River's jobs and try for the lock every PollInterval, with one statement
// on a pooled connection that they give back when the lock is taken. So an
// idle follower costs one statement per PollInterval, a publish wakes one
// process rather than every replica, and a follower holds no connection of
// its own.
//
// The lock lives as long as the leader's session. A leader that stops,
// crashes or is killed loses it when Postgres sees its connection close,
// and a follower takes it at its next try, within PollInterval. A leader
// that stopped talking without closing (its host vanished, the network or
// a proxy between it and Postgres went silent) loses it when Postgres ends
// its session for having sent nothing for leaderIdleTimeout
// (idle_session_timeout on that session; the leader pings every
// listenerPingInterval, between fan-out transactions too). While a leader
// is cut off, its pooled connections may still work, and it drains until
// its lock connection's ping fails (listenerPingInterval +
// listenerTimeout): two dispatchers may then fan out at once, which is
// safe, since the claim skips messages another transaction holds (FOR
// UPDATE SKIP LOCKED) and each (message, endpoint) pair has at most one
// delivery (a UNIQUE pair), as when every replica fanned out.
//
// River elects a leader of its own (its river_leader table) for its
// maintenance and periodic jobs; it is internal to River, so the fan-out
// does not share it.
const leaderLockKey int64 = 0x68726c6466616e // "hrldfan" in ASCII

// FanOutLeaderSuffix ends the application_name of the fan-out leader's
// lock connection, after its process's own (cmd/dispatcher's is
// "herald-dispatcher"), so that pg_stat_activity shows which process
// leads: application_name LIKE '%' || FanOutLeaderSuffix.
const FanOutLeaderSuffix = " (fan-out leader)"

// leaderSession names the leader's session (FanOutLeaderSuffix) and
// subscribes it to outbox.NotifyChannel.
const leaderSession = `SELECT set_config('application_name', current_setting('application_name') || '` + FanOutLeaderSuffix + `', false);
LISTEN ` + outbox.NotifyChannel

// setIdleSessionTimeout sets the leader session's idle_session_timeout to
// $1 (see leaderIdleTimeout).
const setIdleSessionTimeout = `SELECT set_config('idle_session_timeout', $1, false)`

// leaderIdleTimeout is how long Postgres lets the leader's session send
// nothing before it ends it, releasing the lock: longer than the leader
// can go between two pings, which is a fan-out transaction (bounded by
// fanOutTimeout) after a ping interval, plus a ping's own bound. 45 s with
// the default FanOutTimeout.
func leaderIdleTimeout(fanOutTimeout time.Duration) time.Duration {
	return fanOutTimeout + listenerPingInterval + listenerTimeout
}

// takeLeadership takes the fan-out lock if no session holds it.
const takeLeadership = `SELECT pg_try_advisory_lock($1)`

// lead waits until this dispatcher is the fan-out leader and returns its
// lock connection, subscribed to outbox.NotifyChannel. It tries at once,
// then every PollInterval. It returns an error only when ctx ends.
func (d *Dispatcher) lead(ctx context.Context) (*listener, error) {
	for {
		l, err := d.tryLead(ctx)
		switch {
		case l != nil:
			d.logger.InfoContext(ctx, "leading the fan-out")
			return l, nil
		case err != nil && ctx.Err() == nil:
			d.logger.ErrorContext(ctx, "try to lead the fan-out", "error", err)
		}
		sleep(ctx, d.pollInterval)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// tryLead takes the fan-out lock on a pooled connection and, when it got
// it, takes the connection out of the pool (a session lock must not go
// back into it) and subscribes it to outbox.NotifyChannel. It returns nil
// and no error when another session leads.
func (d *Dispatcher) tryLead(ctx context.Context) (*listener, error) {
	ctx, cancel := context.WithTimeout(ctx, listenerTimeout)
	defer cancel()
	pooled, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	var led bool
	if err := pooled.QueryRow(ctx, takeLeadership, leaderLockKey).Scan(&led); err != nil {
		// Closed rather than given back: it may hold the lock.
		conn := pooled.Hijack()
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if !led {
		pooled.Release()
		return nil, nil
	}
	l := &listener{conn: pooled.Hijack()}
	idle := strconv.FormatInt(leaderIdleTimeout(d.fanOutTimeout).Milliseconds(), 10)
	if _, err := l.conn.Exec(ctx, setIdleSessionTimeout, idle); err != nil {
		l.close(ctx)
		return nil, err
	}
	if _, err := l.conn.Exec(ctx, leaderSession); err != nil {
		l.close(ctx)
		return nil, err
	}
	l.pinged = time.Now()
	return l, nil
}
