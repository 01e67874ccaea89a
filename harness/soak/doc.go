// Package soak runs Herald with one-minute partitions and a retention of a
// few minutes under steady traffic, and checks that history stops growing
// once partitions are dropped, that partitions are dropped while deliveries
// are in flight, and that nothing pending is lost.
//
// A producer publishes events through outbox at a fixed rate to two
// endpoints of a receiver on loopback. The main endpoint answers 200 to most
// requests, 500 to a share and holds another share past the sender's
// timeout, so deliveries are retrying all along. The lagging endpoint has a
// rate limit below the burst of events it gets before the steady traffic
// starts, so its deliveries wait minutes for their first attempt: their
// partition comes due while they are still pending and must be kept until
// they are delivered. Dispatcher processes built from cmd/dispatcher
// deliver and run the retention maintenance (package retention) with the
// run's --partition-interval, --retention and --retry-window.
//
// Every Config.Sample the run records the size of history (the partitions
// of messages, deliveries, attempts and replay_deliveries), of River's jobs
// and of the whole database, the number of partition sets, and the
// deliveries pending: the size curve. At the end, [Run] reads what each
// maintenance pass did from the dispatchers' logs and returns a [Report]
// whose Problems list every check that failed (see [Report]).
//
// The test of this package runs [Small] on every make test: too short for a
// one-minute partition to come due, it runs retention passes of its own
// with a clock ahead of the real one (Config.ClockAhead). cmd/soak runs
// [Full], the one docs/soak/output.txt shows.
package soak
