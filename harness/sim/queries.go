package sim

// Every SQL statement of the package. Each experiment runs in a database of
// its own; the consumer's tables below live in its public schema, next to
// the receiver module's webhook_inbox schema.
const (
	// createTables is the consumer the designs are tested on: accounts
	// with credits and a plan, the check-then-insert design's own key
	// table, and applied, a log of every side effect with the plan version
	// it replaced, from which the results are counted.
	createTables = `
CREATE TABLE IF NOT EXISTS accounts (
    id           integer PRIMARY KEY,
    credits      bigint NOT NULL DEFAULT 0,
    plan         text,
    plan_version bigint NOT NULL DEFAULT 0,
    plan_created bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS processed_events (
    event_id text PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS applied (
    event_id         text NOT NULL,
    account          integer NOT NULL,
    plan_version     bigint,
    replaced_version bigint
);`

	insertAccounts = `INSERT INTO accounts (id) SELECT generate_series(0, $1::integer - 1) ON CONFLICT DO NOTHING`

	// addCredits is a credit's side effect and its log line in one statement.
	addCredits = `WITH credited AS (
    UPDATE accounts SET credits = credits + $3 WHERE id = $2
)
INSERT INTO applied (event_id, account) VALUES ($1, $2)`

	// lockPlan reads the stored plan under the row lock that the plan write
	// then holds until commit, so the version it replaces is exact.
	lockPlan = `SELECT plan_version, plan_created FROM accounts WHERE id = $1 FOR UPDATE`
	setPlan  = `WITH updated AS (
    UPDATE accounts SET plan = $3, plan_version = $4, plan_created = $5 WHERE id = $2
)
INSERT INTO applied (event_id, account, plan_version, replaced_version) VALUES ($1, $2, $4, $6)`

	// Check-then-insert's two steps.
	selectProcessed = `SELECT EXISTS (SELECT 1 FROM processed_events WHERE event_id = $1)`
	insertProcessed = `INSERT INTO processed_events (event_id) VALUES ($1)`

	// Counting the results.
	countApplies     = `SELECT event_id, count(*) FROM applied GROUP BY event_id`
	countStaleWrites = `SELECT count(*) FROM applied WHERE plan_version < replaced_version`
	selectPlans      = `SELECT id, plan_version FROM accounts`
	selectPlan       = `SELECT plan_version FROM accounts WHERE id = $1`
	sumCredits       = `SELECT coalesce(sum(credits), 0) FROM accounts`
	countDistinct    = `SELECT count(DISTINCT event_id) FROM applied`
	// countClaims counts the dedupe keys the receiver module stored.
	countClaims = `SELECT count(*) FROM webhook_inbox.claims`
)
