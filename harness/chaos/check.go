package chaos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/delivery"
)

// deliveryKinds are the River job kinds that send deliveries.
var deliveryKinds = []string{delivery.Kind, delivery.BatchKind}

// maxExamples bounds the examples a problem quotes.
const maxExamples = 5

// rescuedError is River's error on a job whose process died while running
// it: the rescuer found it running too long and ran it again.
const rescuedError = "Stuck job rescued by JobRescuer"

// jobRunLimit bounds how long before its request a job run that sent an
// attempt started: the job's time limit (twice the sender's timeout) and
// some margin.
func jobRunLimit(timeout time.Duration) time.Duration { return 2*timeout + 5*time.Second }

// clockMargin allows for the consumer's and River's clocks, both this
// machine's, read at slightly different moments.
const clockMargin = 100 * time.Millisecond

// timingMargin is how far the consumer's and the sender's view of how long
// a request took may differ: the sender's clock runs before the request
// arrives and after the answer leaves.
const timingMargin = 250 * time.Millisecond

// message is a committed event as Herald stored it.
type message struct {
	objectID string
	version  int64
	key      string
}

// attemptRow is one row of Herald's attempt log.
type attemptRow struct {
	webhookID string
	timestamp string
	startedAt time.Time
	outcome   string
	status    int
	problem   string
}

// check reads the end state of a run into r and notes every problem.
func check(ctx context.Context, r *Report, herald, consumer *pgxpool.Pool, arrivals []arrival, rolledBack []uuid.UUID) error {
	messages, err := readMessages(ctx, herald)
	if err != nil {
		return err
	}
	checkMessages(r, messages, rolledBack)
	if err := checkDeliveries(ctx, r, herald); err != nil {
		return err
	}
	attempts, err := readAttempts(ctx, herald)
	if err != nil {
		return err
	}
	jobErrors, err := readJobErrors(ctx, herald)
	if err != nil {
		return err
	}
	checkArrivals(r, messages, arrivals, attempts, jobErrors)
	if err := checkLedger(ctx, r, consumer, messages); err != nil {
		return err
	}
	return checkObjects(ctx, r, herald, consumer)
}

func readMessages(ctx context.Context, herald *pgxpool.Pool) (map[string]message, error) {
	rows, err := herald.Query(ctx, selectMessages, tenant)
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	messages := make(map[string]message)
	var id uuid.UUID
	var m message
	_, err = pgx.ForEachRow(rows, []any{&id, &m.objectID, &m.version, &m.key}, func() error {
		messages[delivery.MessageHeaderID(id)] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	return messages, nil
}

// checkMessages checks that each event was committed once and that no
// rolled-back one was.
func checkMessages(r *Report, messages map[string]message, rolledBack []uuid.UUID) {
	r.Events = len(messages)
	r.RolledBack = len(rolledBack)
	keys := make(map[string]bool, len(messages))
	for _, m := range messages {
		keys[m.key] = true
	}
	if len(keys) != r.Config.Events || len(messages) != r.Config.Events {
		r.problem("%d messages with %d idempotency keys committed; want %d events, each once", len(messages), len(keys), r.Config.Events)
	}
	var committed []string
	for _, id := range rolledBack {
		if _, ok := messages[delivery.MessageHeaderID(id)]; ok {
			committed = append(committed, id.String())
		}
	}
	if len(committed) > 0 {
		r.problem("%d events published in rolled-back transactions exist as messages, e.g. %s", len(committed), examples(committed))
	}
}

func checkDeliveries(ctx context.Context, r *Report, herald *pgxpool.Pool) error {
	var err error
	if r.Deliveries, err = countBy(ctx, herald, selectDeliveryStatuses); err != nil {
		return fmt.Errorf("read deliveries: %w", err)
	}
	if r.Jobs, err = countBy(ctx, herald, selectJobStates, deliveryKinds); err != nil {
		return fmt.Errorf("read delivery jobs: %w", err)
	}
	if n := r.Deliveries["succeeded"]; n != r.Events || n != sum(r.Deliveries) {
		r.problem("want every one of the %d events delivered: %s", r.Events, statusText(r.Deliveries))
	}
	if n := r.Jobs["discarded"] + r.Jobs["cancelled"]; n > 0 {
		r.problem("%d delivery jobs were given up by River (discarded or cancelled); job states: %v", n, r.Jobs)
	}
	var miscounted int
	if err := herald.QueryRow(ctx, selectMiscountedDeliveries).Scan(&miscounted); err != nil {
		return fmt.Errorf("count attempts per delivery: %w", err)
	}
	if miscounted > 0 {
		r.problem("%d deliveries have an attempt_count that differs from their attempt rows, or attempt numbers with gaps or repeats", miscounted)
	}
	return nil
}

func readAttempts(ctx context.Context, herald *pgxpool.Pool) ([]attemptRow, error) {
	rows, err := herald.Query(ctx, selectAttempts)
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	var attempts []attemptRow
	var id uuid.UUID
	var a attemptRow
	_, err = pgx.ForEachRow(rows, []any{&id, &a.timestamp, &a.startedAt, &a.outcome, &a.status, &a.problem}, func() error {
		a.webhookID = delivery.MessageHeaderID(id)
		attempts = append(attempts, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	return attempts, nil
}

// jobError is an error River recorded on a delivery job. Its time is when
// the rescuer found the job stuck, for a job whose process died, or else
// when the failed run of the job started.
type jobError struct {
	at      time.Time
	rescued bool
}

// readJobErrors returns, per webhook ID, the errors River recorded on its
// delivery's job, in time order.
func readJobErrors(ctx context.Context, herald *pgxpool.Pool) (map[string][]jobError, error) {
	rows, err := herald.Query(ctx, selectJobErrors, deliveryKinds)
	if err != nil {
		return nil, fmt.Errorf("read job errors: %w", err)
	}
	errs := make(map[string][]jobError)
	var id uuid.UUID
	var at time.Time
	var text string
	_, err = pgx.ForEachRow(rows, []any{&id, &at, &text}, func() error {
		key := delivery.MessageHeaderID(id)
		errs[key] = append(errs[key], jobError{at: at, rescued: strings.Contains(text, rescuedError)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read job errors: %w", err)
	}
	for _, e := range errs {
		slices.SortFunc(e, func(a, b jobError) int { return a.at.Compare(b.at) })
	}
	return errs, nil
}

// explains reports whether job error e can be the one of the job run that
// sent a request at sent and did not record it: a rescue after it (the
// process died), or a run that started before it and failed.
func (e jobError) explains(sent time.Time, timeout time.Duration) bool {
	if e.rescued {
		return !e.at.Before(sent.Add(-clockMargin))
	}
	return !e.at.After(sent.Add(clockMargin)) && sent.Sub(e.at) <= jobRunLimit(timeout)
}

// checkArrivals matches the consumer's requests to the attempt log: each
// attempt row that sent a request must be a request the consumer got,
// recorded with the outcome the consumer's answer calls for, and each
// request without an attempt row must be accounted for by an error River
// recorded on its job afterwards, one error per request: rescued (its
// dispatcher was killed) or failed after sending (the database was away).
func checkArrivals(r *Report, messages map[string]message, arrivals []arrival, attempts []attemptRow, jobErrors map[string][]jobError) {
	r.Requests = len(arrivals)
	r.RequestsBy = make(map[string]int)
	r.Attempts = len(attempts)
	var strays []string
	for _, a := range arrivals {
		r.RequestsBy[a.answer()]++
		if a.duplicate {
			r.DuplicatesDelivered++
		}
		if _, ok := messages[a.webhookID]; !ok {
			strays = append(strays, a.webhookID)
		}
	}
	if len(strays) > 0 {
		r.problem("%d requests carried an event that was never committed (rolled back?), e.g. %s", len(strays), examples(strays))
	}
	for _, a := range attempts {
		switch a.outcome {
		case string(delivery.Succeeded):
			r.AttemptsSucceeded++
		case string(delivery.Retry):
			r.Retries++
		}
	}

	// Two attempts of one event in one second carry the same timestamp;
	// each attempt row takes the earliest such request it agrees with.
	byKey := make(map[string][]arrival)
	for _, a := range arrivals {
		byKey[a.webhookID+" "+a.timestamp] = append(byKey[a.webhookID+" "+a.timestamp], a)
	}
	for _, same := range byKey {
		slices.SortFunc(same, func(a, b arrival) int { return a.at.Compare(b.at) })
	}
	var unmatched, inconsistent, unexplained []string
	for _, at := range attempts {
		if at.timestamp == "" {
			r.AttemptsUnsent++ // failed before a request was made
			continue
		}
		key := at.webhookID + " " + at.timestamp
		candidates := byKey[key]
		if len(candidates) == 0 && at.status == 0 {
			// Failed without an answer (timed out or refused) before the
			// consumer's handler saw it: nothing to match.
			r.AttemptsLost++
			continue
		}
		if len(candidates) == 0 {
			unmatched = append(unmatched, fmt.Sprintf("%s attempt at %s (%s %q)", at.webhookID, at.startedAt.Format(time.RFC3339Nano), at.outcome, at.problem))
			continue
		}
		i := slices.IndexFunc(candidates, func(a arrival) bool { return a.recordedAs(at, r.Config.SenderTimeout) })
		if i < 0 {
			i = 0
			inconsistent = append(inconsistent, fmt.Sprintf("%s: consumer %q, attempt log %s %d %q", at.webhookID, candidates[0].answer(), at.outcome, at.status, at.problem))
		}
		byKey[key] = slices.Delete(candidates, i, i+1)
	}
	unrecorded := make(map[string][]arrival)
	for _, left := range byKey {
		for _, a := range left {
			unrecorded[a.webhookID] = append(unrecorded[a.webhookID], a)
		}
	}
	for id, left := range unrecorded {
		slices.SortFunc(left, func(a, b arrival) int { return a.at.Compare(b.at) })
		available := slices.Clone(jobErrors[id])
		for _, a := range left {
			r.Unrecorded++
			i := slices.IndexFunc(available, func(e jobError) bool { return e.explains(a.at, r.Config.SenderTimeout) })
			if i < 0 {
				unexplained = append(unexplained, fmt.Sprintf("%s at %s (%s)", a.webhookID, a.at.Format(time.RFC3339Nano), a.answer()))
				continue
			}
			if available[i].rescued {
				r.UnrecordedKill++
			} else {
				r.UnrecordedOutage++
			}
			available = slices.Delete(available, i, i+1)
		}
	}
	if len(unmatched) > 0 {
		r.problem("%d attempt rows record an answer from the consumer, which got no such request, e.g. %s", len(unmatched), examples(unmatched))
	}
	if len(inconsistent) > 0 {
		r.problem("%d attempt rows record another outcome than the consumer's answer, e.g. %s", len(inconsistent), examples(inconsistent))
	}
	if len(unexplained) > 0 {
		r.problem("%d requests have no attempt row, and River recorded no rescue or failed recording of their job afterwards, e.g. %s", len(unexplained), examples(unexplained))
	}
}

// answer says what the consumer did with the request.
func (a arrival) answer() string {
	switch a.fault {
	case Fail:
		return answered500
	case Hang:
		return answeredHang
	case Drop:
		return answeredDrop
	case Late:
		return answeredLate
	}
	switch a.inbox {
	case http.StatusOK:
		return answeredOK
	case http.StatusServiceUnavailable:
		return answeredDatabase
	}
	return fmt.Sprintf(answeredOther, a.inbox)
}

// recordedAs reports whether attempt row at is what a sender with the
// given timeout should have recorded for this request. An answer that took
// about as long as the timeout or longer may have come too late for it.
func (a arrival) recordedAs(at attemptRow, timeout time.Duration) bool {
	retried := at.outcome == string(delivery.Retry)
	timedOut := retried && at.status == 0 && strings.Contains(at.problem, "timed out")
	switch a.fault {
	case Fail:
		return retried && at.status == http.StatusInternalServerError
	case Hang, Late:
		return timedOut
	}
	took := a.end.Sub(a.at)
	if a.fault == Drop {
		// The connection closes without an answer, unless storing took
		// so long that the sender gave up first.
		return retried && at.status == 0 && at.problem != "" && (!timedOut || took > timeout-timingMargin)
	}
	switch {
	case took > timeout+timingMargin:
		return timedOut
	case took > timeout-timingMargin && timedOut:
		return true
	case timedOut && !at.startedAt.Add(timeout).After(a.end.Add(timingMargin)):
		// The sender's clock starts before the request reaches the
		// handler; on a busy machine its deadline can pass before a quick
		// answer leaves, which is a real timeout and a real retry.
		return true
	case a.inbox == http.StatusOK:
		return at.outcome == string(delivery.Succeeded) && at.status == http.StatusOK
	}
	return retried && at.status == a.inbox
}

// checkLedger counts how often the consumer applied each committed event.
func checkLedger(ctx context.Context, r *Report, consumer *pgxpool.Pool, messages map[string]message) error {
	rows, err := consumer.Query(ctx, selectLedger)
	if err != nil {
		return fmt.Errorf("read the ledger: %w", err)
	}
	applied := make(map[string]int)
	var id string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { applied[id] = n; return nil }); err != nil {
		return fmt.Errorf("read the ledger: %w", err)
	}
	var twice, lost, strays []string
	extra := 0
	for id := range messages {
		switch n := applied[id]; {
		case n == 0:
			r.Lost++
			lost = append(lost, id)
		case n == 1:
			r.AppliedOnce++
		default:
			r.AppliedTwice++
			extra += n - 1
			twice = append(twice, fmt.Sprintf("%s %d times", id, n))
		}
	}
	for id := range applied {
		if _, ok := messages[id]; !ok {
			strays = append(strays, id)
		}
	}
	r.DuplicatesAbsorbed = r.DuplicatesDelivered - extra
	if len(lost) > 0 {
		r.problem("%d committed events were never applied, e.g. %s", len(lost), examples(lost))
	}
	if len(twice) > 0 {
		r.problem("%d events were applied more than once: %s", len(twice), examples(twice))
	}
	if len(strays) > 0 {
		r.problem("%d applied events were never committed, e.g. %s", len(strays), examples(strays))
	}
	var dead int
	if err := consumer.QueryRow(ctx, selectDeadLetters).Scan(&dead); err != nil {
		return fmt.Errorf("count dead letters: %w", err)
	}
	if dead > 0 {
		r.problem("%d events are dead letters in the consumer's inbox", dead)
	}
	return nil
}

// checkObjects compares each object's sequence number at the producer,
// its version in Herald and its state at the consumer.
func checkObjects(ctx context.Context, r *Report, herald, consumer *pgxpool.Pool) error {
	type state struct{ version, seq int64 }
	rows, err := consumer.Query(ctx, selectConsumerObjects)
	if err != nil {
		return fmt.Errorf("read the consumer's objects: %w", err)
	}
	applied := make(map[string]state)
	var id string
	var s state
	if _, err := pgx.ForEachRow(rows, []any{&id, &s.version, &s.seq}, func() error { applied[id] = s; return nil }); err != nil {
		return fmt.Errorf("read the consumer's objects: %w", err)
	}
	rows, err = herald.Query(ctx, selectVersions, tenant)
	if err != nil {
		return fmt.Errorf("read the producer's objects: %w", err)
	}
	var seq, version int64
	var stale []string
	_, err = pgx.ForEachRow(rows, []any{&id, &seq, &version}, func() error {
		r.Objects++
		got := applied[id]
		if version == seq && got == (state{version: version, seq: seq}) {
			r.ObjectsLatest++
			return nil
		}
		stale = append(stale, fmt.Sprintf("%s: producer seq %d, Herald version %d, consumer version %d seq %d", id, seq, version, got.version, got.seq))
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the producer's objects: %w", err)
	}
	if len(stale) > 0 {
		r.problem("%d objects are not at their latest version at the consumer, e.g. %s", len(stale), examples(stale))
	}
	return nil
}

func countBy(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (map[string]int, error) {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int)
	var key string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&key, &n}, func() error { counts[key] = n; return nil })
	return counts, err
}

func sum(counts map[string]int) int {
	total := 0
	for _, n := range counts {
		total += n
	}
	return total
}

func examples(items []string) string {
	slices.Sort(items)
	if len(items) > maxExamples {
		return strings.Join(items[:maxExamples], "; ") + "; …"
	}
	return strings.Join(items, "; ")
}
