package dispatcher_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/blackhole"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// A failover that leaves the dispatcher's connections half-open (the
// proxy between it and Postgres stops forwarding, closes nothing, and
// later forwards new connections only) holds it up no longer than
// RecoveryBound: it delivers what was published before, during and after,
// each message once.
func TestDispatcherRecoversFromHalfOpenConnections(t *testing.T) {
	t.Parallel()
	// Over 20 s every stalled wait has timed out by the failover; over
	// 1 s they are still waiting when new connections work.
	for _, outage := range []time.Duration{20 * time.Second, time.Second} {
		t.Run(outage.String(), func(t *testing.T) {
			t.Parallel()
			testFailover(t, outage)
		})
	}
}

func testFailover(t *testing.T, outage time.Duration) {
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	b.endpoint(t, ctx, tenant, r.URL)

	proxy := b.proxy(t)
	// Short timeouts, so that the test is short.
	timeouts := database.Timeouts{Connect: 2 * time.Second, Statement: 2 * time.Second, IdleInTransaction: 3 * time.Second, Ping: 2 * time.Second}
	pool, err := database.Open(ctx, proxy.url, database.Options{MaxConns: 4, Timeouts: timeouts})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	cfg := dispatcher.Config{Pool: pool, FanOutTimeout: 3 * time.Second, PollInterval: 100 * time.Millisecond}
	stop := b.start(t, cfg)
	// Registered after start, so it runs first: a dispatcher stuck on dead
	// connections gets errors rather than holding the test for ever.
	t.Cleanup(func() { _ = proxy.Close() })
	// The bound at these settings, with 20 s more for a loaded machine to
	// send the deliveries.
	bound := dispatcher.RecoveryBound(cfg) + 20*time.Second

	var published []uuid.UUID
	publish := func(n int) {
		for range n {
			published = append(published, b.publish(t, ctx, event("invoice.paid")))
		}
	}
	publish(3)
	b.waitSucceeded(t, ctx, 3, 20*time.Second)

	proxy.BlackHole()
	publish(3)
	time.Sleep(outage)
	proxy.ForwardNew()
	switched := time.Now()
	publish(3)

	deadline := switched.Add(bound)
	for b.statuses(t, ctx)["succeeded"] < len(published) {
		if time.Now().After(deadline) {
			_ = proxy.Close()
			t.Fatalf("%s after the failover, deliveries by status: %v; want %d succeeded", bound, b.statuses(t, ctx), len(published))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("delivered everything %s after the failover", time.Since(switched).Round(time.Millisecond))
	stop()

	want := map[string]int{}
	for _, id := range published {
		want[headerID(id)] = 1
	}
	require.Equal(t, want, webhookIDs(r.Requests()), "every message delivered once")
}

// proxied is a black-hole proxy in front of the test database.
type proxied struct {
	*blackhole.Proxy
	url string // the test database's URL through the proxy
}

func (b *testBundle) proxy(t *testing.T) proxied {
	t.Helper()
	u, err := url.Parse(b.url)
	require.NoError(t, err)
	p, err := blackhole.Listen(u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	u.Host = p.Addr()
	return proxied{Proxy: p, url: u.String()}
}
