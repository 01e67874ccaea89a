package sim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A receiver that dies between the dedupe key and the side effect loses
// every such event when the key committed alone, and none when key and
// effect share a transaction that the dropped connection rolls back.
func TestCrashTable(t *testing.T) {
	t.Parallel()
	b := setup(t)

	rows, err := RunCrash(context.Background(), b.cfg, b.newDB)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	split, oneTx := rows[0], rows[1]

	require.Equal(t, crashSplit, split.Design)
	require.Positive(t, split.Crashes, "the receiver crashed")
	require.Equal(t, split.Crashes, split.Lost, "each crash lost its event for good")
	require.Equal(t, split.Events, split.Keys, "yet every key is stored")

	require.Equal(t, crashOneTx, oneTx.Design)
	require.Positive(t, oneTx.Crashes)
	require.Zero(t, oneTx.Lost)
	require.Equal(t, oneTx.Events, oneTx.Applied)
	require.Equal(t, oneTx.Events, oneTx.Keys)
	require.Equal(t, oneTx.Expected, oneTx.Ledger)
}
