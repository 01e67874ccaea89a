package receiver_test

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/receiver"
)

func TestApplyIfNewer(t *testing.T) {
	t.Parallel()

	applyIfNewer := func(t *testing.T, bundle *testBundle, objectID string, version int64) bool {
		t.Helper()
		var newer bool
		err := pgx.BeginFunc(bundle.ctx, bundle.pool, func(tx pgx.Tx) error {
			var err error
			newer, err = receiver.ApplyIfNewer(bundle.ctx, tx, "acme", objectID, version)
			return err
		})
		require.NoError(t, err)
		return newer
	}

	t.Run("EqualIsNotNewer", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		require.True(t, applyIfNewer(t, bundle, "acct_1", 3), "first version seen")
		require.False(t, applyIfNewer(t, bundle, "acct_1", 3), "same version again")
		require.False(t, applyIfNewer(t, bundle, "acct_1", 2), "older version")
		require.True(t, applyIfNewer(t, bundle, "acct_1", 4), "newer version")
		require.True(t, applyIfNewer(t, bundle, "acct_2", 1), "objects are separate")
	})

	t.Run("RolledBackVersionIsNotRecorded", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		tx, err := bundle.pool.Begin(bundle.ctx)
		require.NoError(t, err)
		newer, err := receiver.ApplyIfNewer(bundle.ctx, tx, "acme", "acct_1", 5)
		require.NoError(t, err)
		require.True(t, newer)
		require.NoError(t, tx.Rollback(bundle.ctx))

		require.True(t, applyIfNewer(t, bundle, "acct_1", 5), "the rolled-back update must be applicable again")
	})

	// Every version of one object, shuffled and applied from several
	// goroutines at once: only the highest may stand at the end, and no
	// update may overwrite a newer one on the way.
	t.Run("ShuffledConcurrentUpdatesEndOnLatest", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		const versions = 40
		order := rand.New(rand.NewPCG(20261023, 0)).Perm(versions)
		var wg sync.WaitGroup
		errs := make(chan error, versions)
		for _, i := range order {
			version := int64(i + 1)
			wg.Go(func() {
				errs <- pgx.BeginFunc(bundle.ctx, bundle.pool, func(tx pgx.Tx) error {
					newer, err := receiver.ApplyIfNewer(bundle.ctx, tx, "acme", "acct_1", version)
					if err != nil || !newer {
						return err
					}
					tag, err := tx.Exec(bundle.ctx, `INSERT INTO accounts (id, plan, plan_version) VALUES ('acct_1', $1, $2)
ON CONFLICT (id) DO UPDATE SET plan = excluded.plan, plan_version = excluded.plan_version
WHERE accounts.plan_version < excluded.plan_version`, "plan_v"+strconv.FormatInt(version, 10), version)
					if err == nil && tag.RowsAffected() != 1 {
						t.Errorf("guard said v%d is newer but the account holds a newer plan", version)
					}
					return err
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}

		var plan string
		var version int64
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT plan, plan_version FROM accounts WHERE id = 'acct_1'`).Scan(&plan, &version))
		require.Equal(t, "plan_v40", plan)
		require.EqualValues(t, versions, version)
	})

	t.Run("RefusesWhatCannotBeOrdered", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		tx, err := bundle.pool.Begin(bundle.ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(bundle.ctx) }()
		_, err = receiver.ApplyIfNewer(bundle.ctx, tx, "acme", "acct_1", 0)
		require.ErrorContains(t, err, "must be positive")
		_, err = receiver.ApplyIfNewer(bundle.ctx, tx, "acme", "", 1)
		require.ErrorContains(t, err, "must not be empty")
	})
}
