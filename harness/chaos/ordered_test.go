package chaos

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOrderOfFindsVersionsOutOfTurnAndGaps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	messages := map[string]message{
		"msg_1": {eventType: orderedType, objectID: "obj_a", version: 1},
		"msg_2": {eventType: eventType, objectID: "obj_a", version: 2}, // another endpoint's
		"msg_3": {eventType: orderedType, objectID: "obj_a", version: 3},
		"msg_4": {eventType: orderedType, objectID: "obj_a", version: 4},
		"msg_5": {eventType: orderedType, objectID: "obj_b", version: 1},
	}
	ok := func(id string, from, to time.Duration) arrival {
		return arrival{endpoint: orderedPath, webhookID: id, at: t0.Add(from), end: t0.Add(to), fault: NoFault, inbox: http.StatusOK}
	}
	failed := func(id string, from, to time.Duration) arrival {
		a := ok(id, from, to)
		a.fault, a.inbox = Fail, 0
		return a
	}

	t.Run("InTurnWithRetries", func(t *testing.T) {
		t.Parallel()
		o := orderOf(messages, []arrival{
			failed("msg_1", 0, time.Second),
			ok("msg_5", 0, time.Second), // another object, in parallel
			ok("msg_1", 2*time.Second, 3*time.Second),
			ok("msg_3", 4*time.Second, 5*time.Second),
			ok("msg_3", 6*time.Second, 7*time.Second), // again: the answer was lost
			ok("msg_4", 8*time.Second, 9*time.Second),
			{endpoint: mainPath, webhookID: "msg_2", at: t0, end: t0.Add(time.Second), fault: NoFault, inbox: http.StatusOK},
		}, nil)
		require.Empty(t, o.early)
		require.Empty(t, o.late)
		require.Empty(t, o.missing)
		require.Equal(t, 4, o.events)
		require.Equal(t, 6, o.requests, "the requests to the ordered path")
	})

	t.Run("BeforeTheLowerVersionWasAnswered", func(t *testing.T) {
		t.Parallel()
		o := orderOf(messages, []arrival{
			ok("msg_1", 0, 2*time.Second),
			ok("msg_3", time.Second, 3*time.Second), // while version 1 was in flight
			ok("msg_4", 4*time.Second, 5*time.Second),
			ok("msg_5", 0, time.Second),
		}, nil)
		require.Len(t, o.early, 1)
		require.Contains(t, o.early[0], "obj_a version 3")
		require.Empty(t, o.late)
	})

	t.Run("AfterAHigherVersionWasAnswered", func(t *testing.T) {
		t.Parallel()
		o := orderOf(messages, []arrival{
			ok("msg_1", 0, time.Second),
			ok("msg_3", 2*time.Second, 3*time.Second),
			ok("msg_4", 4*time.Second, 5*time.Second),
			failed("msg_3", 6*time.Second, 7*time.Second), // sent again after version 4
			ok("msg_5", 0, time.Second),
		}, nil)
		require.Len(t, o.late, 1)
		require.Contains(t, o.late[0], "obj_a version 3")
	})

	t.Run("GapsOnlyWhereGivenUp", func(t *testing.T) {
		t.Parallel()
		log := []arrival{
			failed("msg_1", 0, time.Second),
			ok("msg_3", 2*time.Second, 3*time.Second),
			ok("msg_4", 4*time.Second, 5*time.Second),
			ok("msg_5", 0, time.Second),
		}
		o := orderOf(messages, log, map[string]bool{"msg_1": true})
		require.Empty(t, o.early, "version 1 was given up: version 3 may go")
		require.Empty(t, o.missing)

		o = orderOf(messages, log, nil)
		require.Len(t, o.early, 2, "versions 3 and 4 went without version 1")
		require.Equal(t, []string{"obj_a version 1 (msg_1)"}, o.missing)
	})
}
