package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const hour = time.Hour

// The two published schedules from the reference article.
var (
	svix             = Fixed{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * hour, 5 * hour, 10 * hour, 10 * hour}
	standardWebhooks = Fixed{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * hour, 5 * hour, 10 * hour, 14 * hour, 20 * hour, 24 * hour}
)

func TestFixedNext(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		schedule Fixed
		attempt  int
		want     time.Duration
		wantOK   bool
	}{
		{"first retry", svix, 1, 5 * time.Second, true},
		{"last retry", svix, 7, 10 * hour, true},
		{"past the list", svix, 8, 0, false},
		{"zero attempt is the first retry", svix, 0, 5 * time.Second, true},
		{"negative attempt is the first retry", svix, -3, 5 * time.Second, true},
		{"negative delay counts as zero", Fixed{-time.Minute}, 1, 0, true},
		{"empty never retries", Fixed{}, 1, 0, false},
		{"nil never retries", nil, 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := t0.Add(time.Hour)
			at, ok := tt.schedule.Next(tt.attempt, t0, now)
			require.Equal(t, tt.wantOK, ok)
			if !ok {
				require.True(t, at.IsZero())
				return
			}
			require.Equal(t, now.Add(tt.want), at)
		})
	}
}

func TestFixedOffsets(t *testing.T) {
	t.Parallel()

	last := func(f Fixed) time.Duration {
		offsets := f.Offsets()
		require.Len(t, offsets, len(f)+1)
		require.Zero(t, offsets[0], "the first attempt is at offset 0")
		return offsets[len(offsets)-1]
	}
	require.Equal(t, 27*hour+35*time.Minute+5*time.Second, last(svix))
	require.Equal(t, 75*hour+35*time.Minute+5*time.Second, last(standardWebhooks))
	require.Equal(t, []time.Duration{0}, Fixed(nil).Offsets())
	require.Equal(t, []time.Duration{0, 0, time.Second}, Fixed{-time.Second, time.Second}.Offsets())
}

func TestSchedulesImplementSchedule(t *testing.T) {
	t.Parallel()

	for _, s := range []Schedule{Default(), Policy{}, svix} {
		at, ok := s.Next(1, t0, t0)
		require.True(t, ok)
		require.False(t, at.Before(t0))
	}
}
