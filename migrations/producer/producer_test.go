package producer_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/migrations/producer"
)

// producerTemplate is a producer's database in split mode: the outbox
// alone.
var producerTemplate = pgtest.Template{Name: "producer", Fingerprint: producer.Fingerprint(), Migrate: producer.Apply}

func TestApplyIsIdempotentAndSafeConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPoolFrom(t, pgtest.Empty)

	require.ErrorIs(t, producer.Check(ctx, pool), producer.ErrPending)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = producer.Apply(ctx, pool) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, producer.Apply(ctx, pool), "a second Apply is a no-op")
	require.NoError(t, producer.Check(ctx, pool))
	all, err := producer.All()
	require.NoError(t, err)
	var applied int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+producer.VersionTable).Scan(&applied))
	require.Equal(t, len(all), applied)
}

// A database holds Herald's schema or a producer's outbox, never both:
// each installer refuses the other's database and changes nothing.
func TestEachSchemaRefusesTheOthersDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	herald := pgtest.NewPool(t)
	require.ErrorIs(t, producer.Apply(ctx, herald), producer.ErrHeraldDatabase)
	require.ErrorIs(t, producer.Check(ctx, herald), producer.ErrHeraldDatabase)
	require.False(t, exists(t, herald, producer.VersionTable))

	source := pgtest.NewPoolFrom(t, producerTemplate)
	require.ErrorIs(t, migrations.Apply(ctx, source), migrations.ErrProducerDatabase)
	require.False(t, exists(t, source, "herald.schema_migrations"))
	require.False(t, exists(t, source, "herald.river_job"))
}

func exists(t *testing.T, pool *pgxpool.Pool, table string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok))
	return ok
}

// The producer's publishing functions answer bad input as Herald's do,
// word for word: one call, one answer, in either mode. The tenant is the
// exception: the producer's database cannot know Herald's tenants, so the
// relay checks it.
func TestPublishingFunctionsAnswerAsHeraldsDo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	herald := pgtest.NewPool(t)
	_, err := herald.Exec(ctx, "INSERT INTO herald.tenants (id) VALUES ('acme')")
	require.NoError(t, err)
	source := pgtest.NewPoolFrom(t, producerTemplate)

	for _, sql := range []string{
		`SELECT herald.publish('acme', 'Invoice Paid', 'inv_1', '{}')`,
		`SELECT herald.publish('acme', 'invoice.paid', '', '{}')`,
		`SELECT herald.publish('acme', 'invoice.paid', 'inv_1', '[]')`,
		`SELECT herald.publish('acme', 'invoice.paid', 'inv_1', '{}', '')`,
		`SELECT herald.publish('acme', 'invoice.paid', 'inv_1', '{}', channels => ARRAY['no spaces'])`,
		`SELECT herald.publish('', 'invoice.paid', 'inv_1', '{}')`,
		`SELECT herald.publish_many('acme', '{}')`,
		`SELECT herald.publish_many('acme', '[{"type": "invoice.paid", "object_id": "a", "data": {}, "idempotency_key": "k"}, {"type": "invoice.paid", "object_id": "b", "data": {}, "idempotency_key": "k"}]')`,
		`SELECT herald.publish_many('acme', '[{"type": "invoice.paid", "object_id": "a", "data": {}, "extra": 1}]')`,
	} {
		heraldErr := run(herald, sql)
		sourceErr := run(source, sql)
		require.Error(t, heraldErr, sql)
		require.Equal(t, heraldErr.Error(), sourceErr.Error(), sql)
	}
	for _, sql := range []string{
		`SELECT * FROM herald.try_publish_many('acme', ARRAY['invoice.paid'], ARRAY['a'], ARRAY['not json'], ARRAY[NULL])`,
		`SELECT * FROM herald.try_publish_many('acme', ARRAY['invoice.paid'], ARRAY['a'], ARRAY['"x"'], ARRAY[NULL])`,
		`SELECT * FROM herald.try_publish_many('acme', ARRAY['invoice.paid', 'invoice.paid'], ARRAY['a', 'a'], ARRAY['{}', '{"n": 1}'], ARRAY['k1', 'k2'])`,
	} {
		require.Equal(t, answer(t, herald, sql), answer(t, source, sql), sql)
	}
}

func run(pool *pgxpool.Pool, sql string) error {
	_, err := pool.Exec(context.Background(), sql)
	return err
}

// answer is what try_publish_many returns, less what differs by call
// (ids and times).
func answer(t *testing.T, pool *pgxpool.Pool, sql string) [][]any {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT item_index, version, duplicate, problem_field, problem,
    regexp_replace(body, '"timestamp":"[^"]*"', '') FROM (`+sql+`) AS p`)
	require.NoError(t, err)
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		values, err := rows.Values()
		require.NoError(t, err)
		out = append(out, values)
	}
	require.NoError(t, rows.Err())
	return out
}
