package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Fault is a failure on Herald's side that stopped an attempt before
// anything was sent: the endpoint is not to blame. Decide makes it
// Deferred: the attempt is not recorded, the endpoint's health, the
// delivery's attempt count and its retry window are left as they were,
// and the job tries again soon (FirstDeferral). Faults are logged at error
// level and counted in herald_dispatcher_faults_total by Cause.
//
// Check for one with errors.As:
//
//	var fault *delivery.Fault
//	if errors.As(res.Err, &fault) && fault.Cause == delivery.FaultSecrets { … }
type Fault struct {
	// Cause says which part of Herald failed.
	Cause FaultCause
	// Err is what went wrong, worded for the operator.
	Err error
}

func (f *Fault) Error() string { return f.Err.Error() }

// Unwrap returns Err.
func (f *Fault) Unwrap() error { return f.Err }

// FaultCause names the part of Herald a Fault comes from; it is the cause
// label of herald_dispatcher_faults_total.
type FaultCause string

// The causes.
const (
	// FaultSecrets: the endpoint's signing secrets could not be read or
	// opened (the database failed, HERALD_SECRET_KEY is not the key they
	// were sealed with), or it has none.
	FaultSecrets FaultCause = "secrets"
	// FaultSigning: the secrets were read but could not sign.
	FaultSigning FaultCause = "signing"
	// FaultCredentials: the endpoint's authentication or mutual TLS
	// settings could not be read or opened (the database failed,
	// HERALD_SECRET_KEY is not the key they were sealed with).
	FaultCredentials FaultCause = "credentials"
	// FaultResolver: Herald's DNS resolver did not answer, or could not be
	// reached, for the endpoint's host name. A name that does not exist,
	// or that the resolver answers SERVFAIL for, is the endpoint's.
	FaultResolver FaultCause = "resolver"
	// FaultProxy: the egress proxy (--egress-proxy) could not be reached,
	// broke off, or refused Herald's credentials
	// (ssrf.ErrProxyUnavailable). A proxy that refuses or cannot reach
	// one destination speaks of the endpoint.
	FaultProxy FaultCause = "egress_proxy"
	// FaultClock: this process's clock is too far from Postgres's for
	// receivers to accept its timestamps (Config.Clock).
	FaultClock FaultCause = "clock_skew"
	// FaultDatabase: a job failed to load, record or queue in Herald's
	// database and returned the error; River runs it again on its own
	// retry policy. Not a Fault value: nothing is deferred, it is only
	// logged and counted.
	FaultDatabase FaultCause = "database"
)

var faultCauses = []FaultCause{FaultSecrets, FaultSigning, FaultCredentials, FaultResolver, FaultProxy, FaultClock, FaultDatabase}

// Deferrals: when a job stopped by a Fault tries again.
const (
	// FirstDeferral is the mean wait after a job's first Fault in a row;
	// each further one in a row doubles it, up to MaxDeferral. Each wait
	// d is drawn from [d/2, 3d/2), so that the jobs an outage of Herald's
	// own held back do not come back together.
	FirstDeferral = 5 * time.Second
	// MaxDeferral bounds the mean wait: once Herald's fault is repaired
	// (the key restored, the resolver back), every job it held back is
	// sent within about one and a half times this.
	MaxDeferral = time.Minute
)

// deferredMetadataKey counts, in a job's River metadata, its Faults in a
// row.
const deferredMetadataKey = "herald_deferred"

// faultLogEvery bounds the error lines of one cause: the first fault is
// logged, then at most one line per faultLogEvery, which says how many
// faults of that cause it did not log. An outage of Herald's own defers
// every job again and again, and a line each would bury the cause.
const faultLogEvery = 10 * time.Second

// deferral returns the mean wait after n Faults in a row before this one.
func deferral(n int) time.Duration {
	d := FirstDeferral
	for ; n > 0 && d < MaxDeferral; n-- {
		d *= 2
	}
	return min(d, MaxDeferral)
}

// newFaultCounter returns herald_dispatcher_faults_total, with every cause
// at 0, registered with r when r is not nil.
func newFaultCounter(r prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_dispatcher_faults_total",
		Help: "Faults on Herald's side that stopped a delivery job, by cause. None is charged to an endpoint; every one is retried.",
	}, []string{"cause"})
	for _, cause := range faultCauses {
		c.WithLabelValues(string(cause))
	}
	if r == nil {
		return c, nil
	}
	if err := r.Register(c); err != nil {
		return nil, err
	}
	return c, nil
}

// deferJob counts and logs fault, which stopped job, and returns the snooze
// after which the job tries again: about FirstDeferral, doubling with each
// fault in a row (see deferral). attrs say what the job was about to send.
func (w *Worker) deferJob(ctx context.Context, job *rivertype.JobRow, fault *Fault, attrs ...any) error {
	n := countIn(job.Metadata, deferredMetadataKey)
	if err := river.MetadataSet(ctx, deferredMetadataKey, n+1); err != nil {
		return err
	}
	d := deferral(n)
	wait := d/2 + rand.N(d)
	w.noteFault(ctx, fault.Cause, fault, append(attrs, "retry_in", wait, "in_a_row", n+1)...)
	return river.JobSnooze(wait)
}

// clearDeferrals resets the count of deferJob once job got to send.
func clearDeferrals(ctx context.Context, job *rivertype.JobRow) error {
	if countIn(job.Metadata, deferredMetadataKey) == 0 {
		return nil
	}
	return river.MetadataSet(ctx, deferredMetadataKey, 0)
}

// jobFailed counts and logs err, returned by a delivery job, as a fault of
// Herald's database (FaultDatabase), unless it is none: River's
// instructions (a snooze, a cancel) and a job interrupted because the
// process is stopping are not failures.
func (w *Worker) jobFailed(ctx context.Context, err error, attrs ...any) {
	var (
		snooze *river.JobSnoozeError
		cancel *river.JobCancelError
	)
	if err == nil || errors.As(err, &snooze) || errors.As(err, &cancel) || ctx.Err() != nil {
		return
	}
	w.noteFault(ctx, FaultDatabase, err, attrs...)
}

// noteFault counts a fault of cause and logs it through w's faultLog.
func (w *Worker) noteFault(ctx context.Context, cause FaultCause, err error, attrs ...any) {
	w.faults.WithLabelValues(string(cause)).Inc()
	unlogged, ok := w.faultLog.admit(cause, time.Now())
	if !ok {
		return
	}
	attrs = append(attrs, "cause", cause, "error", err)
	if unlogged > 0 {
		attrs = append(attrs, "not_logged_since_last", unlogged)
	}
	w.logger.ErrorContext(ctx, "a fault on Herald's side stopped a delivery job; nothing is charged to the endpoint, and the job is retried", attrs...)
}

// faultLog decides which faults are logged: per cause, the first and then
// one per faultLogEvery.
type faultLog struct {
	mu    sync.Mutex
	cause map[FaultCause]*faultLogState
}

type faultLogState struct {
	logged   time.Time
	unlogged int
}

// admit reports whether a fault of cause at now is logged, and how many of
// that cause were not since the last one that was.
func (l *faultLog) admit(cause FaultCause, now time.Time) (unlogged int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cause == nil {
		l.cause = make(map[FaultCause]*faultLogState)
	}
	s := l.cause[cause]
	if s == nil {
		s = &faultLogState{}
		l.cause[cause] = s
	}
	if !s.logged.IsZero() && now.Sub(s.logged) < faultLogEvery {
		s.unlogged++
		return 0, false
	}
	unlogged = s.unlogged
	s.logged, s.unlogged = now, 0
	return unlogged, true
}

// countIn reads the count kept under key in a job's River metadata.
func countIn(metadata []byte, key string) int {
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return 0
	}
	var n int
	if json.Unmarshal(m[key], &n) != nil {
		return 0
	}
	return max(n, 0)
}
