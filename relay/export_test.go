package relay

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/migrations/producer"
)

// SetAfterHeraldCommit makes the relay built from cfg run f after
// Herald's commit and before the source's mark, in the goroutine that
// marks (the next step may run meanwhile); an error from f abandons the
// mark there, as a crash would.
func SetAfterHeraldCommit(cfg *Config, f func(source string, ids []uuid.UUID) error) {
	cfg.afterHeraldCommit = f
}

// Prune runs a retention pass on the source named name now.
func (r *Relay) Prune(ctx context.Context, name string) error {
	for _, s := range r.sources {
		if s.Name == name {
			return r.prune(ctx, s)
		}
	}
	panic("relay: no source " + name)
}

// ProducerTemplate is a producer's database in split mode: the outbox
// alone.
var ProducerTemplate = pgtest.Template{Name: "producer", Fingerprint: producer.Fingerprint(), Migrate: producer.Apply}

// ExplainClaim returns the plan Postgres makes on pool for a claim of
// DefaultBatchSize.
func ExplainClaim(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	return explain(t, pool, "EXPLAIN (COSTS OFF) "+claimOutbox, DefaultBatchSize, []uuid.UUID{})
}
