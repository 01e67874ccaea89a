package historyid_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/historyid"
)

func TestChildKeepsTheParentsTimeAndIsAVersion7UUID(t *testing.T) {
	t.Parallel()
	parent := uuid.Must(uuid.NewV7())
	seen := map[uuid.UUID]bool{}
	for range 1000 {
		child, err := historyid.Child(parent)
		require.NoError(t, err)
		require.Equal(t, parent[:6], child[:6], "the child carries the parent's milliseconds")
		require.Equal(t, uuid.Version(7), child.Version())
		require.Equal(t, uuid.RFC4122, child.Variant())
		require.Equal(t, parent.Time(), child.Time())
		require.False(t, seen[child], "children are unique")
		seen[child] = true
	}
}

func TestBoundAndTimeAreTheMillisecondOfAUUIDv7(t *testing.T) {
	t.Parallel()
	id := uuid.Must(uuid.NewV7())
	at := historyid.Time(id)
	bound := historyid.Bound(at)
	require.Equal(t, id[:6], bound[:6])
	require.LessOrEqual(t, historyid.Bound(at).String(), id.String(), "the bound is the millisecond's smallest id")
	require.Greater(t, historyid.Bound(at.Add(time.Millisecond)).String(), id.String(), "the next millisecond's bound is above every id of this one")
	when := time.Date(2026, 12, 3, 10, 11, 12, 345_000_000, time.UTC)
	require.True(t, historyid.Time(historyid.Bound(when)).Equal(when))
}
