package dispatcher

import (
	"cmp"
	"time"

	"github.com/heraldhq/herald/internal/database"
)

// RecoveryBound is the longest a dispatcher configured by cfg takes to fan
// out and deliver again once Postgres answers new connections, after a
// failover left its connections dead without closing them: the peer
// silent, nothing refused or reset. It is the sum of the waits such a
// failover can put in the fan-out's way, each bounded:
//
//   - the fan-out transaction in flight on a dead connection, and River's
//     fetch of jobs beside it: the longer of FanOutTimeout (30 s) and
//     River's 10 s (riverFetchTimeout);
//   - the fan-out leader's connection, pinged every 5 s: the ping,
//     bounded by 10 s (listenerTimeout);
//   - the fan-out lock, held by the old leader's session until Postgres
//     ends it for its silence: leaderIdleTimeout, FanOutTimeout + 15 s;
//   - connecting again: the pool's ConnectTimeout
//     (database.DefaultConnectTimeout, 10 s);
//   - the pool's other dead connections, each found dead by whoever
//     takes it next, at the cost of the pool's PingTimeout
//     (database.DefaultPingTimeout, 2 s), and holding its place in the
//     pool for database.BrokenCloseTimeout (2 s) more: MaxConns ×
//     PingTimeout + BrokenCloseTimeout at the most;
//   - two polls: 2 × PollInterval.
//
// With cmd/dispatcher's defaults (14 connections) that is 30 + 10 + 45 +
// 10 + 30 + 2 = 127 s, a worst case that adds up waits which in practice
// overlap: the failover test (TestDispatcherRecovers…) sees 0.3 to 14 s
// against 32 s at its settings. Work a dead connection had claimed
// (messages, locked rows) is released by Postgres within its
// idle-in-transaction timeout (database.DefaultIdleInTransactionTimeout)
// of the failure. Where the kernel can tell the peer is gone (it stopped
// acknowledging), connections fail sooner, within
// database.DefaultTCPUserTimeout.
func RecoveryBound(cfg Config) time.Duration {
	pool := cfg.Pool.Config()
	fanOutTimeout := cmp.Or(cfg.FanOutTimeout, DefaultFanOutTimeout)
	return max(fanOutTimeout, riverFetchTimeout) +
		listenerTimeout + leaderIdleTimeout(fanOutTimeout) +
		pool.ConnConfig.ConnectTimeout +
		time.Duration(pool.MaxConns)*pool.PingTimeout + database.BrokenCloseTimeout +
		2*cmp.Or(cfg.PollInterval, DefaultPollInterval)
}

// riverFetchTimeout is how long River lets one fetch of jobs take
// (rivercommon.HotOperationTimeout, River's own): a fetch on a dead
// connection delays deliveries that long.
const riverFetchTimeout = 10 * time.Second
