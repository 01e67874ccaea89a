package receiver_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/receiver"
)

func TestClaim(t *testing.T) {
	t.Parallel()

	t.Run("SecondCopyIsNotFirst", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		for i, want := range []bool{true, false} {
			tx, err := bundle.pool.Begin(bundle.ctx)
			require.NoError(t, err)
			first, err := receiver.Claim(bundle.ctx, tx, "acme", "msg_1")
			require.NoError(t, err)
			require.Equal(t, want, first, "copy %d", i+1)
			if first {
				require.NoError(t, credit(bundle.ctx, tx, "acct_1", 100))
			}
			require.NoError(t, tx.Commit(bundle.ctx))
		}
		require.EqualValues(t, 100, bundle.credits(t, "acct_1"))
	})

	t.Run("SourcesAreSeparate", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		for _, source := range []string{"acme", "globex"} {
			tx, err := bundle.pool.Begin(bundle.ctx)
			require.NoError(t, err)
			first, err := receiver.Claim(bundle.ctx, tx, source, "msg_1")
			require.NoError(t, err)
			require.True(t, first, "the same webhook ID from %s is another event", source)
			require.NoError(t, tx.Commit(bundle.ctx))
		}
	})

	// Two copies inside their transactions at the same moment: the unique
	// key makes the second wait for the first and then see it, where a
	// check-then-insert would let both apply.
	t.Run("ConcurrentCopiesApplyOnce", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		// One connection per copy, all inside their transactions at once.
		copies := int(bundle.pool.Config().MaxConns)
		var ready, wg sync.WaitGroup
		ready.Add(copies)
		start := make(chan struct{})
		firsts := make([]bool, copies)
		errs := make([]error, copies)
		for i := range copies {
			wg.Go(func() {
				tx, err := bundle.pool.Begin(bundle.ctx)
				if err != nil {
					errs[i] = err
					ready.Done()
					return
				}
				defer func() { _ = tx.Rollback(bundle.ctx) }()
				ready.Done()
				<-start
				first, err := receiver.Claim(bundle.ctx, tx, "acme", "msg_concurrent")
				if err == nil && first {
					err = credit(bundle.ctx, tx, "acct_1", 100)
				}
				if err == nil {
					err = tx.Commit(bundle.ctx)
				}
				firsts[i], errs[i] = first, err
			})
		}
		ready.Wait()
		close(start)
		wg.Wait()

		winners := 0
		for i := range copies {
			require.NoError(t, errs[i])
			if firsts[i] {
				winners++
			}
		}
		require.Equal(t, 1, winners)
		require.EqualValues(t, 100, bundle.credits(t, "acct_1"))
	})

	t.Run("RolledBackClaimFreesTheKey", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		tx, err := bundle.pool.Begin(bundle.ctx)
		require.NoError(t, err)
		first, err := receiver.Claim(bundle.ctx, tx, "acme", "msg_1")
		require.NoError(t, err)
		require.True(t, first)
		require.NoError(t, tx.Rollback(bundle.ctx), "the side effect failed")

		tx, err = bundle.pool.Begin(bundle.ctx)
		require.NoError(t, err)
		first, err = receiver.Claim(bundle.ctx, tx, "acme", "msg_1")
		require.NoError(t, err)
		require.True(t, first, "the retry must be applied: the failed attempt left no key")
		require.NoError(t, tx.Commit(bundle.ctx))
	})

	t.Run("EmptyKeyIsAnError", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		tx, err := bundle.pool.Begin(bundle.ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(bundle.ctx) }()
		_, err = receiver.Claim(bundle.ctx, tx, "acme", "")
		require.ErrorContains(t, err, "must not be empty")
	})
}
