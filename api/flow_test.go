package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

// testReceiver is a webhook endpoint that verifies signatures and answers
// with the status it is set to.
type testReceiver struct {
	*httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	secret signing.Secret
	got    []receivedWebhook
}

type receivedWebhook struct {
	ID   string
	Type string
}

func newTestReceiver(t *testing.T) *testReceiver {
	r := &testReceiver{}
	r.status.Store(http.StatusOK)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := (signing.Verifier{Secrets: []signing.Secret{r.secret}}).Verify(req.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var payload struct{ Type string }
		_ = json.Unmarshal(body, &payload)
		r.got = append(r.got, receivedWebhook{ID: req.Header.Get("webhook-id"), Type: payload.Type})
		w.WriteHeader(int(r.status.Load()))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *testReceiver) received() []receivedWebhook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedWebhook(nil), r.got...)
}

// startDispatcher runs a dispatcher on the bundle's database until the test
// ends, with retries so short that a failing delivery is exhausted at once.
func (b *testBundle) startDispatcher(t *testing.T) {
	t.Helper()
	box, err := secretbox.Parse(b.secretKey)
	require.NoError(t, err)
	st, err := store.New(b.pool, store.Config{Box: box})
	require.NoError(t, err)
	d, err := dispatcher.New(dispatcher.Config{
		Pool:         b.pool,
		Delivery:     deliveryConfig(st),
		PollInterval: 50 * time.Millisecond,
		Logger:       testLogger(t),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func deliveryConfig(st *store.Store) delivery.Config {
	return delivery.Config{
		Secrets:   st,
		Transport: webhooktest.Transport(),
		Policy:    schedule.Policy{Base: 10 * time.Millisecond, Cap: 20 * time.Millisecond, Window: 100 * time.Millisecond},
		Timeout:   5 * time.Second,
	}
}

// Publish, fail, resend, test event and replay through the API, delivered
// by a real dispatcher to a real receiver.
func TestDeliveryResendAndReplayEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newTestReceiver(t)
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": rcv.URL})
	secret, err := signing.ParseSecret(b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+e.ID+"/secret", nil).JSON(t)["secret"].(string))
	require.NoError(t, err)
	rcv.mu.Lock()
	rcv.secret = secret
	rcv.mu.Unlock()
	b.startDispatcher(t)

	rcv.status.Store(http.StatusInternalServerError)
	m := b.publish(t, b.acme, "acme", "invoice.paid", "inv_1")
	b.waitForDelivery(t, m.ID, "failed")

	rcv.status.Store(http.StatusOK)
	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages/"+m.ID+"/endpoints/"+e.ID+"/resend", nil)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	b.waitForDelivery(t, m.ID, "succeeded")
	var attempts struct {
		Data []struct {
			Trigger string `json:"trigger"`
			Outcome string `json:"outcome"`
		} `json:"data"`
	}
	b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+m.ID+"/attempts", nil).Decode(t, &attempts)
	require.Equal(t, "manual", attempts.Data[0].Trigger, "the newest attempt is the resend")
	for _, w := range rcv.received() {
		require.Equal(t, "msg_"+m.ID, w.ID, "every attempt carries the same webhook-id")
	}

	resp = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints/"+e.ID+"/test", nil)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	require.Eventually(t, func() bool {
		got := rcv.received()
		return got[len(got)-1].Type == "herald.test"
	}, 20*time.Second, 50*time.Millisecond)

	before := len(rcv.received())
	resp = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints/"+e.ID+"/replays", map[string]any{"since": time.Now().Add(-time.Hour)})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	replayPath := resp.Header.Get("Location")
	var rep struct {
		Status                string
		Total, Enqueued, Done int
	}
	require.Eventually(t, func() bool {
		b.do(t, b.acme, "GET", replayPath, nil).Decode(t, &rep)
		return rep.Status == "completed" && rep.Done == rep.Total
	}, 20*time.Second, 50*time.Millisecond, "replay progress: %+v", rep)
	require.Equal(t, 2, rep.Total, "the message and the test event")
	require.Equal(t, before+2, len(rcv.received()))
	b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+m.ID+"/attempts", nil).Decode(t, &attempts)
	require.Equal(t, "replay", attempts.Data[0].Trigger)
}

// waitForDelivery waits until the message's only delivery has status.
func (b *testBundle) waitForDelivery(t *testing.T, messageID, status string) {
	t.Helper()
	var m messageView
	require.Eventually(t, func() bool {
		b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+messageID, nil).Decode(t, &m)
		return len(m.Deliveries) == 1 && m.Deliveries[0].Status == status
	}, 20*time.Second, 50*time.Millisecond, "delivery of %s should become %s: %+v", messageID, status, m.Deliveries)
}
