package delivery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// A token is replaced before it expires: a minute early, or a quarter of
// its lifetime early when that is shorter; one without expiry is kept.
func TestTokenIsReplacedBeforeItExpires(t *testing.T) {
	t.Parallel()
	fetched := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		lifetime   time.Duration
		freshUntil time.Duration
	}{
		{time.Hour, time.Hour - MaxTokenRefreshMargin},
		{4 * time.Minute, 3 * time.Minute},
		{2 * time.Minute, 90 * time.Second},
		{2 * time.Second, 1500 * time.Millisecond},
	} {
		c := &tokenCache{token: &oauth2.Token{AccessToken: "a", Expiry: fetched.Add(tt.lifetime)}, fetchedAt: fetched}
		require.True(t, c.fresh(fetched.Add(tt.freshUntil-time.Millisecond)), "lifetime %s", tt.lifetime)
		require.False(t, c.fresh(fetched.Add(tt.freshUntil)), "lifetime %s", tt.lifetime)
	}
	forever := &tokenCache{token: &oauth2.Token{AccessToken: "a"}, fetchedAt: fetched}
	require.True(t, forever.fresh(fetched.Add(1000*time.Hour)))
}
