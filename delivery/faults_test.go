package delivery_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/endpointauth"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

// switchableSecrets is a SecretSource that asks whichever store it holds:
// one opened with another HERALD_SECRET_KEY, then the right one.
type switchableSecrets struct {
	store atomic.Pointer[store.Store]
}

func (s *switchableSecrets) ActiveSecrets(ctx context.Context, endpointID uuid.UUID, now time.Time) ([]signing.Secret, error) {
	return s.store.Load().ActiveSecrets(ctx, endpointID, now)
}

// notCharged checks that nothing of an attempt of delivery id to endpoint
// was sent, recorded or charged: the delivery's retry window has not
// started, no attempt row exists, and the endpoint is healthy and enabled
// with no operational event about it.
func (b *steppedBundle) notCharged(t *testing.T, ctx context.Context, id, endpoint uuid.UUID) {
	t.Helper()
	d := b.delivery(t, ctx, id)
	require.Equal(t, "pending", d.Status)
	require.Zero(t, d.AttemptCount, "attempt_count counts the attempts charged to the endpoint")
	require.Nil(t, d.FirstAttemptAt, "the retry window has not started")
	require.Nil(t, d.LastError)
	require.Empty(t, b.attempts(t, ctx, id), "no attempt row: nothing was sent")
	var (
		enabled      bool
		failingSince *time.Time
		events       int
	)
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT enabled, failing_since FROM herald.endpoints WHERE id = $1", endpoint).
		Scan(&enabled, &failingSince))
	require.True(t, enabled, "the endpoint is still enabled")
	require.Nil(t, failingSince, "the endpoint's failing spell has not started")
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.messages WHERE tenant_id = $1", health.DefaultOpsTenant).Scan(&events))
	require.Zero(t, events, "no operational event was published")
}

// A dispatcher started with another HERALD_SECRET_KEY than the one the
// endpoint's secret was sealed with cannot open it, so cannot sign. That is
// Herald's fault: for six days, past the warning (24 h), the retry window
// (1 h here) and the disabling (5 days), nothing is sent and nothing is
// charged; the job comes back within a minute or so each time, and each
// time is counted and logged with its cause. Once the key is right the
// delivery goes out, as its first attempt.
func TestWrongSecretKeyIsNotChargedToTheEndpoint(t *testing.T) {
	t.Parallel()
	secrets := &switchableSecrets{}
	logs := &lockedBuffer{}
	b, ctx := setupStepped(t, delivery.Config{Policy: fast, Secrets: secrets, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	otherKey, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	wrong, err := store.New(b.pool, store.Config{Box: otherKey})
	require.NoError(t, err)
	secrets.store.Store(wrong)

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
	start := b.clock.Now()

	result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	first := result.Job.ScheduledAt.Sub(start)
	require.GreaterOrEqual(t, first, delivery.FirstDeferral/2, "the first deferral")
	require.Less(t, first, delivery.FirstDeferral*3/2, "the first deferral")
	for day := 1; day <= 6; day++ {
		require.Equal(t, river.EventKindJobSnoozed, result.EventKind, "day %d: the job is retried", day)
		require.Less(t, result.Job.ScheduledAt.Sub(b.clock.Now()), delivery.MaxDeferral*3/2, "day %d: retried soon", day)
		b.notCharged(t, ctx, id, endpoint)
		b.clock.Set(start.Add(time.Duration(day) * 24 * time.Hour))
		result, err = b.worker.WorkJob(ctx, t, b.tx, result.Job)
		require.NoError(t, err)
	}
	require.Zero(t, r.Count(), "nothing is sent that could not be signed")
	require.Equal(t, 7.0, faults(t, b.metrics, delivery.FaultSecrets), "every deferral is counted")
	require.Zero(t, faults(t, b.metrics, delivery.FaultSigning))
	var line struct {
		Level, Msg, Cause, Error string
		Delivery, Endpoint       uuid.UUID
	}
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &line), "log: %s", logs)
	require.Equal(t, "ERROR", line.Level)
	require.Equal(t, "secrets", line.Cause)
	require.Contains(t, line.Error, "sealed under a different secret key")
	require.Equal(t, id, line.Delivery)
	require.Equal(t, endpoint, line.Endpoint)

	secrets.store.Store(b.store)
	b.clock.Set(result.Job.ScheduledAt)
	result, err = b.worker.WorkJob(ctx, t, b.tx, result.Job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, result.EventKind)
	require.Equal(t, 1, r.Count())
	require.NoError(t, signing.Verifier{Secrets: []signing.Secret{b.secret(t, ctx, endpoint)}, Now: b.clock.Now}.
		Verify(r.Requests()[0].Header, r.Requests()[0].Body))
	d := b.delivery(t, ctx, id)
	require.Equal(t, "succeeded", d.Status)
	require.Equal(t, 1, d.AttemptCount, "the first attempt charged is the one that was sent")
}

// An endpoint without an active secret (a row deleted by hand, a bug) is
// Herald's data, not its owner's: nothing is sent and nothing is charged.
func TestWorkerWithoutSecretSendsNothing(t *testing.T) {
	t.Parallel()
	b, ctx := setupStepped(t, delivery.Config{Policy: once})

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	_, err := b.pool.Exec(ctx, "DELETE FROM herald.endpoint_secrets WHERE endpoint_id = $1", endpoint)
	require.NoError(t, err)
	id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)

	result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, result.EventKind, "the job is retried")
	b.notCharged(t, ctx, id, endpoint)
	require.Zero(t, r.Count())
	require.Equal(t, 1.0, faults(t, b.metrics, delivery.FaultSecrets))
}

// dnsServer answers every DNS query on a loopback UDP port with rcode
// (3 NXDOMAIN, 2 SERVFAIL), or with nothing when rcode is negative. It
// stops when the test ends.
func dnsServer(t *testing.T, rcode int) string {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			if rcode < 0 {
				continue
			}
			if answer, ok := dnsAnswer(buf[:n], rcode); ok {
				_, _ = conn.WriteTo(answer, from)
			}
		}
	}()
	return conn.LocalAddr().String()
}

// dnsAnswer is the answer with rcode and no records to a one-question
// query: its id and question, without the query's additional records.
func dnsAnswer(query []byte, rcode int) ([]byte, bool) {
	const header = 12
	if len(query) < header || binary.BigEndian.Uint16(query[4:]) != 1 {
		return nil, false
	}
	end := header
	for end < len(query) && query[end] != 0 {
		end += int(query[end]) + 1
	}
	end += 1 + 4 // the root label, type and class
	if end > len(query) {
		return nil, false
	}
	answer := append([]byte(nil), query[:end]...)
	answer[2] = 0x80 | query[2]&0x01 // a response, recursion desired as asked
	answer[3] = 0x80 | byte(rcode)   // recursion available
	binary.BigEndian.PutUint16(answer[6:], 0)
	binary.BigEndian.PutUint16(answer[8:], 0)
	binary.BigEndian.PutUint16(answer[10:], 0)
	return answer, true
}

// closedUDPPort returns a loopback UDP address nothing listens on: a query
// sent there is refused.
func closedUDPPort(t *testing.T) string {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := conn.LocalAddr().String()
	require.NoError(t, conn.Close())
	return addr
}

// resolvingAt returns the delivery transport (the SSRF guard's, loopback
// allowed) with a resolver that asks the DNS server at addr, as the
// dispatcher's resolver would be asked.
func resolvingAt(addr string) http.RoundTripper {
	guard := ssrf.New()
	dialer := guard.Dialer()
	dialer.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	transport := guard.Transport()
	transport.DialContext = dialer.DialContext
	return transport
}

// When Herald's own resolver does not answer, or cannot be reached, the
// endpoint is not to blame: nothing is recorded or charged and the job is
// retried. When the resolver answers that the endpoint's name does not
// exist (NXDOMAIN), or that resolving it failed (SERVFAIL: the name's own
// servers failed), the attempt is the endpoint's and is charged.
func TestResolverFaultsAreHeraldsAndMissingNamesTheEndpoints(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		resolver func(t *testing.T) string
		charged  string // the attempt's error when charged; "" when not
	}{
		{name: "our resolver does not answer", resolver: func(t *testing.T) string { return dnsServer(t, -1) }},
		{name: "our resolver refuses the query", resolver: closedUDPPort},
		{name: "the name does not exist", resolver: func(t *testing.T) string { return dnsServer(t, 3) }, charged: "no such host"},
		{name: "resolving the name failed", resolver: func(t *testing.T) string { return dnsServer(t, 2) }, charged: "server misbehaving"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, ctx := setupStepped(t, delivery.Config{Policy: fast, Timeout: time.Second, Transport: resolvingAt(tt.resolver(t))})
			endpoint := b.endpoint(t, ctx, "http://hooks.herald-test.example/in")
			id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)

			result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobSnoozed, result.EventKind, "the job is retried")
			if tt.charged == "" {
				b.notCharged(t, ctx, id, endpoint)
				require.Equal(t, 1.0, faults(t, b.metrics, delivery.FaultResolver))
				return
			}
			require.Zero(t, faults(t, b.metrics, delivery.FaultResolver))
			attempts := b.attempts(t, ctx, id)
			require.Len(t, attempts, 1)
			require.Contains(t, *attempts[0].Error, tt.charged)
			require.Equal(t, "retry", attempts[0].Outcome)
			var failingSince *time.Time
			require.NoError(t, b.pool.QueryRow(ctx, "SELECT failing_since FROM herald.endpoints WHERE id = $1", endpoint).Scan(&failingSince))
			require.NotNil(t, failingSince, "the endpoint's failing spell has started")
		})
	}
}

// A batch job stopped by Herald's fault keeps its deliveries: it records
// nothing, hands none off and snoozes; once the fault is repaired it sends
// them all, each as its first attempt.
func TestBatchKeepsItsDeliveriesThroughHeraldsFault(t *testing.T) {
	t.Parallel()
	secrets := &switchableSecrets{}
	b, ctx := setup(t, delivery.Config{Policy: fast, Secrets: secrets})
	otherKey, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	wrong, err := store.New(b.pool, store.Config{Box: otherKey})
	require.NoError(t, err)
	secrets.store.Store(wrong)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)

	ids, job := b.batch(t, ctx, endpoint, 5)
	require.Eventually(t, func() bool {
		row, err := b.client.JobGet(ctx, job)
		require.NoError(t, err)
		var m struct {
			Deferred int `json:"herald_deferred"`
		}
		require.NoError(t, json.Unmarshal(row.Metadata, &m))
		return m.Deferred > 0
	}, 20*time.Second, 20*time.Millisecond, "the batch job was never deferred")
	for _, id := range ids {
		d := b.delivery(t, ctx, id)
		require.Equal(t, "pending", d.Status)
		require.Zero(t, d.AttemptCount)
		require.Nil(t, d.NextAttemptAt, "the delivery is still the batch job's")
		require.Empty(t, b.attempts(t, ctx, id))
	}
	require.Zero(t, b.ownJobs(t, ctx, ids), "nothing was handed off")
	require.Zero(t, r.Count())

	secrets.store.Store(b.store)
	b.waitJob(t, ctx, job, rivertype.JobStateCompleted)
	for _, id := range ids {
		d := b.delivery(t, ctx, id)
		require.Equal(t, "succeeded", d.Status)
		require.Equal(t, 1, d.AttemptCount)
	}
	require.Equal(t, len(ids), r.Count())
	require.Zero(t, b.ownJobs(t, ctx, ids))
}

// Attempts are counted by the process that records them (issue 16, item
// 4): a scrape of the dispatcher reads its counters, not the database.
func TestRecordedAttemptsAreCountedInProcess(t *testing.T) {
	t.Parallel()
	b, ctx := setupStepped(t, delivery.Config{Policy: once})
	ok := webhooktest.NewReceiver(t, webhooktest.Status(200))
	bad := webhooktest.NewReceiver(t, webhooktest.Status(500))
	for _, r := range []*webhooktest.Receiver{ok, bad} {
		endpoint := b.endpoint(t, ctx, r.URL)
		id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
		_, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
		require.NoError(t, err)
	}

	families, err := b.metrics.Gather()
	require.NoError(t, err)
	outcomes := map[string]float64{}
	var observed uint64
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "herald_attempts_total":
				outcomes[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			case "herald_attempt_duration_seconds":
				observed = m.GetHistogram().GetSampleCount()
			}
		}
	}
	require.Equal(t, map[string]float64{"succeeded": 1, "retry": 1, "exhausted": 0, "endpoint_gone": 0}, outcomes)
	require.Equal(t, uint64(2), observed)
}

// switchableCredentials is a CredentialSource that asks whichever store it
// holds.
type switchableCredentials struct {
	store atomic.Pointer[store.Store]
}

func (s *switchableCredentials) Credentials(ctx context.Context, endpointID uuid.UUID) (endpointauth.Credentials, error) {
	return s.store.Load().Credentials(ctx, endpointID)
}

// Credentials that cannot be opened (another HERALD_SECRET_KEY) are
// Herald's fault, as signing secrets are: nothing is sent, recorded or
// charged, and the fault is counted as "credentials".
func TestUnreadableCredentialsAreNotChargedToTheEndpoint(t *testing.T) {
	t.Parallel()
	credentials := &switchableCredentials{}
	b, ctx := setupStepped(t, delivery.Config{Policy: fast, Credentials: credentials})
	otherKey, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	wrong, err := store.New(b.pool, store.Config{Box: otherKey})
	require.NoError(t, err)
	credentials.store.Store(wrong)

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	auth := &endpointauth.Authentication{Type: endpointauth.Bearer, Token: "t"}
	require.NoError(t, b.store.SetCredentials(ctx, endpoint, store.CredentialsChange{Authentication: &auth}))
	id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)

	result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, result.EventKind, "deferred")
	b.notCharged(t, ctx, id, endpoint)
	require.Zero(t, r.Count())
	require.Equal(t, 1.0, faults(t, b.metrics, delivery.FaultCredentials))

	credentials.store.Store(b.store)
	_, err = b.worker.WorkJob(ctx, t, b.tx, result.Job)
	require.NoError(t, err)
	require.Equal(t, 1, r.Count(), "sent once the credentials open")
	require.Equal(t, "Bearer t", r.Requests()[0].Header.Get("Authorization"))
}

// An egress proxy that cannot be reached is Herald's fault: nothing is
// charged to the endpoint, and the fault is counted as "egress_proxy".
func TestUnreachableEgressProxyIsNotChargedToTheEndpoint(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ln.Close()) // nothing listens at the proxy's address
	proxy, err := ssrf.ParseProxy("http://" + ln.Addr().String())
	require.NoError(t, err)
	guard := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	b, ctx := setupStepped(t, delivery.Config{Policy: fast, Transport: guard.ProxyTransport(proxy)})

	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
	result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, result.EventKind, "deferred")
	b.notCharged(t, ctx, id, endpoint)
	require.Zero(t, r.Count())
	require.Equal(t, 1.0, faults(t, b.metrics, delivery.FaultProxy))
}
