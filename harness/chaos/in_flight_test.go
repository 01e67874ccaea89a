package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOverlapsFindTwoAttemptsOfADeliveryInFlightAtOnce(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(endpoint, id string, from, to time.Duration) arrival {
		return arrival{endpoint: endpoint, webhookID: id, at: t0.Add(from), end: t0.Add(to)}
	}

	t.Run("OneAfterAnother", func(t *testing.T) {
		t.Parallel()
		log := []arrival{
			at(mainPath, "msg_1", 0, time.Second),
			at(mainPath, "msg_1", time.Second, 2*time.Second), // starts the instant the first ends
			at(mainPath, "msg_1", 3*time.Second, 4*time.Second),
		}
		require.Empty(t, overlaps(log))
	})

	t.Run("Overlap", func(t *testing.T) {
		t.Parallel()
		log := []arrival{
			at(mainPath, "msg_1", 2*time.Second, 3*time.Second),
			at(mainPath, "msg_1", 0, 1*time.Second),
			at(mainPath, "msg_1", 2500*time.Millisecond, 2600*time.Millisecond),
		}
		found := overlaps(log)
		require.Len(t, found, 1)
		require.Equal(t, "msg_1", found[0].webhookID)
		require.Equal(t, t0.Add(2*time.Second), found[0].earlier.from)
		require.Equal(t, t0.Add(2500*time.Millisecond), found[0].later.from)
		require.Contains(t, found[0].String(), "in flight until")
	})

	t.Run("ALongRequestIsNotHiddenByAShortOne", func(t *testing.T) {
		t.Parallel()
		log := []arrival{
			at(mainPath, "msg_1", 0, 10*time.Second),
			at(mainPath, "msg_1", time.Second, 2*time.Second),
			at(mainPath, "msg_1", 5*time.Second, 6*time.Second),
		}
		require.Len(t, overlaps(log), 2, "both later requests arrived while the first was in flight")
	})

	t.Run("OtherDeliveriesDoNotOverlap", func(t *testing.T) {
		t.Parallel()
		log := []arrival{
			at(mainPath, "msg_1", 0, 2*time.Second),
			at(mainPath, "msg_2", time.Second, 3*time.Second), // another message
			at(gonePath, "msg_1", time.Second, 3*time.Second), // the same message, another endpoint
		}
		require.Empty(t, overlaps(log))
	})
}
