package delivery

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/schedule"
)

func TestDecide(t *testing.T) {
	t.Parallel()

	var (
		first  = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
		policy = schedule.Policy{Base: 10 * time.Second, Cap: time.Hour, Window: 24 * time.Hour, MaxRetryAfter: 2 * time.Hour}
		within = first.Add(time.Hour)      // inside the window
		late   = first.Add(24 * time.Hour) // the window has just closed
		edge   = first.Add(23*time.Hour + 59*time.Minute)
	)
	// retryIn bounds RetryAt: at least now+min, before now+max.
	type retryIn struct{ min, max time.Duration }

	tests := []struct {
		name        string
		res         Result
		attempt     int
		now         time.Time
		want        Verdict
		retry       retryIn
		wantProblem string
	}{
		{name: "200 succeeds", res: Result{StatusCode: 200}, attempt: 1, now: within, want: Succeeded},
		{name: "204 succeeds", res: Result{StatusCode: 204}, attempt: 1, now: within, want: Succeeded},
		{name: "299 succeeds", res: Result{StatusCode: 299}, attempt: 1, now: within, want: Succeeded},
		{name: "2xx after the window still succeeds", res: Result{StatusCode: 200}, attempt: 9, now: late, want: Succeeded},
		{name: "410 disables the endpoint", res: Result{StatusCode: 410}, attempt: 1, now: within, want: EndpointGone, wantProblem: "HTTP 410 Gone"},
		{name: "410 after the window still disables", res: Result{StatusCode: 410}, attempt: 5, now: late, want: EndpointGone},
		{name: "500 retries on the schedule", res: Result{StatusCode: 500}, attempt: 1, now: within, want: Retry,
			retry: retryIn{0, 10 * time.Second}, wantProblem: "HTTP 500 Internal Server Error"},
		{name: "third failure waits up to four bases", res: Result{StatusCode: 500}, attempt: 3, now: within, want: Retry,
			retry: retryIn{0, 40 * time.Second}},
		{name: "404 retries", res: Result{StatusCode: 404}, attempt: 1, now: within, want: Retry, retry: retryIn{0, 10 * time.Second}},
		{name: "401 retries", res: Result{StatusCode: 401}, attempt: 2, now: within, want: Retry, retry: retryIn{0, 20 * time.Second}},
		{name: "302 is a failure", res: Result{StatusCode: 302, Location: "https://elsewhere.example/hook"}, attempt: 1, now: within, want: Retry,
			retry:       retryIn{0, 10 * time.Second},
			wantProblem: "HTTP 302 Found (redirects are not followed; set the endpoint's URL to the final address, https://elsewhere.example/hook)"},
		{name: "timeout retries", res: Result{Err: errors.New("timed out after 15s")}, attempt: 1, now: within, want: Retry,
			retry: retryIn{0, 10 * time.Second}, wantProblem: "timed out after 15s"},
		{name: "network error retries", res: Result{Err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}, attempt: 4, now: within, want: Retry,
			retry: retryIn{0, 80 * time.Second}, wantProblem: "dial tcp 127.0.0.1:9: connect: connection refused"},
		{name: "an error is worded as storable text", res: Result{Err: errors.New("x509: certificate is valid for herald\x00.example\xff, not localhost")},
			attempt: 1, now: within, want: Retry, retry: retryIn{0, 10 * time.Second},
			wantProblem: "x509: certificate is valid for herald\uFFFD.example\uFFFD, not localhost"},
		{name: "429 honours Retry-After seconds", res: Result{StatusCode: 429, RetryAfter: "120"}, attempt: 1, now: within, want: Retry,
			retry: retryIn{120 * time.Second, 120*time.Second + 1}},
		{name: "503 honours Retry-After", res: Result{StatusCode: 503, RetryAfter: "2"}, attempt: 1, now: within, want: Retry,
			retry: retryIn{2 * time.Second, 10 * time.Second}},
		{name: "502 honours Retry-After", res: Result{StatusCode: 502, RetryAfter: "600"}, attempt: 1, now: within, want: Retry,
			retry: retryIn{600 * time.Second, 600*time.Second + 1}},
		{name: "504 honours an HTTP-date", res: Result{StatusCode: 504, RetryAfter: within.Add(5 * time.Minute).Format(http.TimeFormat)}, attempt: 1, now: within,
			want: Retry, retry: retryIn{5 * time.Minute, 5*time.Minute + 1}},
		{name: "Retry-After is clamped", res: Result{StatusCode: 429, RetryAfter: "86400"}, attempt: 1, now: within, want: Retry,
			retry: retryIn{2 * time.Hour, 2*time.Hour + 1}},
		{name: "Retry-After never brings a retry forward", res: Result{StatusCode: 503, RetryAfter: "0"}, attempt: 12, now: within, want: Retry,
			retry: retryIn{0, time.Hour}},
		{name: "malformed Retry-After falls back to the schedule", res: Result{StatusCode: 429, RetryAfter: "soon"}, attempt: 1, now: within, want: Retry,
			retry: retryIn{0, 10 * time.Second}},
		{name: "Retry-After on a 500 is ignored", res: Result{StatusCode: 500, RetryAfter: "3600"}, attempt: 1, now: within, want: Retry,
			retry: retryIn{0, 10 * time.Second}},
		{name: "failure after the window is exhausted", res: Result{StatusCode: 500}, attempt: 20, now: late, want: Exhausted,
			wantProblem: "HTTP 500 Internal Server Error"},
		{name: "timeout after the window is exhausted", res: Result{Err: errors.New("timed out after 15s")}, attempt: 20, now: late, want: Exhausted},
		{name: "a draw past the window is moved to its end", res: Result{StatusCode: 500}, attempt: 20, now: edge, want: Retry,
			retry: retryIn{0, time.Minute + 1}},
		{name: "Retry-After past the window exhausts", res: Result{StatusCode: 429, RetryAfter: "3600"}, attempt: 20, now: edge, want: Exhausted},
		{name: "Herald's fault is deferred", res: Result{Err: &Fault{Cause: FaultSecrets, Err: errors.New("not sent, could not read the endpoint's signing secrets")}},
			attempt: 1, now: within, want: Deferred, wantProblem: "not sent, could not read the endpoint's signing secrets"},
		{name: "Herald's fault after the window is still deferred", res: Result{Err: &Fault{Cause: FaultSecrets, Err: errors.New("not sent")}},
			attempt: 20, now: late, want: Deferred},
		{name: "a wrapped fault is deferred", res: Result{Err: fmt.Errorf("attempt: %w", &Fault{Cause: FaultSigning, Err: errors.New("not sent")})},
			attempt: 3, now: within, want: Deferred},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 50 { // the draw is random; every draw must satisfy the bounds
				o := Decide(tt.res, tt.attempt, first, tt.now, policy)
				require.Equal(t, tt.want, o.Verdict)
				if tt.wantProblem != "" {
					require.Equal(t, tt.wantProblem, o.Problem)
				}
				if tt.want == Succeeded {
					require.Empty(t, o.Problem)
				} else {
					require.NotEmpty(t, o.Problem, "a failed attempt must say what went wrong")
				}
				if tt.want != Retry {
					require.True(t, o.RetryAt.IsZero(), "only a retry has a retry time, got %s", o.RetryAt)
					continue
				}
				wait := o.RetryAt.Sub(tt.now)
				require.GreaterOrEqual(t, wait, tt.retry.min)
				require.Less(t, wait, tt.retry.max)
				require.False(t, o.RetryAt.After(first.Add(policy.Window)), "a retry must not fall after the window")
			}
		})
	}
}

func TestDecideUsesTheDefaultPolicy(t *testing.T) {
	t.Parallel()

	first := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	o := Decide(Result{StatusCode: 500}, 1, first, first.Add(schedule.DefaultWindow-time.Second), schedule.Policy{})
	require.Equal(t, Retry, o.Verdict)
	o = Decide(Result{StatusCode: 500}, 1, first, first.Add(schedule.DefaultWindow), schedule.Policy{})
	require.Equal(t, Exhausted, o.Verdict, "the default window is 3 days")
}
