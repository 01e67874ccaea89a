package historyid_test

import (
	"testing"

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
