// Package enabling keeps the enabling of an endpoint and the fan-out
// apart.
//
// The fan-out reads whether each endpoint is enabled without locking its
// row and makes a skipped delivery for one that is disabled. Without a
// barrier, a fan-out that read an endpoint as disabled could commit its
// skipped deliveries after the endpoint was enabled and after the replay
// started with it (replay only_failed) had walked past them: skipped
// forever. So every fan-out transaction takes FanOut, a shared advisory
// lock, before it reads endpoints, and enabling takes Enable, the same
// lock exclusive, as the first thing its transaction locks: enabling
// waits for the fan-outs in flight, whose deliveries it and its replay
// then see, and fan-outs that start meanwhile wait for it and read the
// endpoint enabled. Enabling is an operator's action, rare and short; the
// wait it adds to the fan-out is that transaction's length.
package enabling

// The lock's key is 0x68726c64656e61, "hrldena" in ASCII.
const (
	// FanOut takes the lock shared, until the transaction ends.
	FanOut = `SELECT pg_advisory_xact_lock_shared(29399207444311649)`
	// Enable takes the lock exclusive, until the transaction ends.
	Enable = `SELECT pg_advisory_xact_lock(29399207444311649)`
)
