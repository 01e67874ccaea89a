package chaos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/replay"
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
	eventType string
	objectID  string
	version   int64
	key       string
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
func check(ctx context.Context, r *Report, h *harness) error {
	herald, consumer := h.herald, h.consumerDB
	arrivals := h.consumer.requestsSeen()
	messages, err := readMessages(ctx, herald)
	if err != nil {
		return err
	}
	checkMessages(r, messages, h.producers.rolledBackIDs())
	if err := checkDeliveries(ctx, r, herald); err != nil {
		return err
	}
	if err := checkOperations(ctx, r, h, arrivals); err != nil {
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
	if unexplained := checkArrivals(r, messages, arrivals, attempts, jobErrors); len(unexplained) > 0 {
		if err := describeJobs(ctx, r, herald, unexplained); err != nil {
			return err
		}
	}
	checkInFlight(r, arrivals)
	if err := checkOrder(ctx, r, h, messages, arrivals); err != nil {
		return err
	}
	poison, err := poisonEvent(r, messages)
	if err != nil {
		return err
	}
	if err := checkLedger(ctx, r, consumer, messages, poison); err != nil {
		return err
	}
	return checkObjects(ctx, r, herald, consumer, poison)
}

// poisonEvent finds the poison event among the committed ones; nil when
// the run has none.
func poisonEvent(r *Report, messages map[string]message) (*poisoned, error) {
	if r.Config.Poison < 0 {
		return nil, nil
	}
	key := "event-" + strconv.Itoa(r.Config.Poison)
	for id, m := range messages {
		if m.key == key {
			r.Poison = id
			return &poisoned{webhookID: id, message: m}, nil
		}
	}
	return nil, fmt.Errorf("chaos: the poison event %d (idempotency key %s) was never committed", r.Config.Poison, key)
}

// poisoned is the poison event.
type poisoned struct {
	webhookID string
	message
}

// checkInFlight checks that no delivery had two requests in flight at the
// consumer at once.
func checkInFlight(r *Report, arrivals []arrival) {
	found := overlaps(arrivals)
	r.InFlightAtOnce = len(found)
	if len(found) > 0 {
		texts := make([]string, len(found))
		for i, o := range found {
			texts[i] = o.String()
		}
		r.problem("%d requests arrived while another request of the same delivery was still in flight, e.g. %s", len(found), examples(texts))
	}
}

// checkOperations checks what became of what the run did to Herald: the
// second endpoint's deliveries, the resent deliveries and those whose job
// was ended by force.
func checkOperations(ctx context.Context, r *Report, h *harness, arrivals []arrival) error {
	herald := h.herald
	for _, a := range arrivals {
		if a.fault == Gone {
			r.GoneRequests++
		}
	}
	if r.Config.GoneShare > 0 {
		var gone map[string]int
		var err error
		if gone, err = countBy(ctx, herald, selectEndpointDeliveries, h.goneEndpoint); err != nil {
			return fmt.Errorf("read the second endpoint's deliveries: %w", err)
		}
		r.GoneDeliveries, r.GoneSucceeded = sum(gone), gone["succeeded"]
		if err := herald.QueryRow(ctx, countGoneAttempts, h.goneEndpoint).Scan(&r.GoneAttempts); err != nil {
			return fmt.Errorf("count 410 attempts: %w", err)
		}
		if r.GoneAttempts == 0 {
			r.problem("no attempt to the second endpoint recorded its 410 Gone: it was never disabled")
		}
		if r.GoneDeliveries == 0 || r.GoneSucceeded != r.GoneDeliveries {
			r.problem("want every delivery to the second endpoint succeeded after its replay: %s", statusText(gone))
		}
		if r.replayID == uuid.Nil {
			r.problem("the second endpoint was never replayed")
		} else {
			rep, err := replay.Get(ctx, herald, tenant, h.goneEndpoint, r.replayID)
			if err != nil {
				return fmt.Errorf("read the replay: %w", err)
			}
			r.Replayed = rep.Total
			if rep.Status != replay.StatusCompleted || rep.Total == 0 || rep.Enqueued != rep.Total || rep.Done != rep.Total {
				r.problem("the only_failed replay of the second endpoint is %s with %d of %d enqueued and %d done; want it completed, all done, and not empty", rep.Status, rep.Enqueued, rep.Total, rep.Done)
			}
		}
	}

	r.Resends = len(r.resent)
	var failed []string
	for _, w := range r.resent {
		var status string
		if err := herald.QueryRow(ctx, selectDeliveryStatus, w.message, w.endpointID).Scan(&status); err != nil {
			return fmt.Errorf("read a resent delivery: %w", err)
		}
		if status == "succeeded" {
			r.ResentSucceeded++
		} else {
			failed = append(failed, w.webhookID+" "+status)
		}
	}
	if len(failed) > 0 {
		r.problem("%d resent deliveries did not succeed: %s", len(failed), examples(failed))
	}

	r.ForcedEnds = len(r.forced)
	var stranded []string
	for _, f := range r.forced {
		var status string
		var later int
		if err := herald.QueryRow(ctx, selectDeliveryStatus, f.message, f.endpointID).Scan(&status); err != nil {
			return fmt.Errorf("read a delivery whose job was ended: %w", err)
		}
		if err := herald.QueryRow(ctx, selectJobsAfter, f.delivery, f.job, deliveryKinds).Scan(&later); err != nil {
			return fmt.Errorf("read the jobs of a delivery whose job was ended: %w", err)
		}
		if status == "succeeded" && later > 0 {
			r.ForcedRecovered++
		} else {
			stranded = append(stranded, fmt.Sprintf("%s (job %d %s): %s, %d later jobs completed", f.webhookID, f.job, f.how, status, later))
		}
	}
	if len(stranded) > 0 {
		r.problem("%d deliveries whose job was ended by force were not given a new job that delivered them: %s", len(stranded), examples(stranded))
	}
	var ended int
	if err := herald.QueryRow(ctx, countEndedJobs, deliveryKinds).Scan(&ended); err != nil {
		return fmt.Errorf("count ended delivery jobs: %w", err)
	}
	if ended != len(r.forced) {
		r.problem("%d delivery jobs were discarded or cancelled, %d of them by the run: River gave up %d by itself; job states: %v", ended, len(r.forced), ended-len(r.forced), r.Jobs)
	}
	return nil
}

func readMessages(ctx context.Context, herald *pgxpool.Pool) (map[string]message, error) {
	rows, err := herald.Query(ctx, selectMessages, tenant)
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	messages := make(map[string]message)
	var id uuid.UUID
	var m message
	_, err = pgx.ForEachRow(rows, []any{&id, &m.eventType, &m.objectID, &m.version, &m.key}, func() error {
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
// It returns the webhook IDs of the requests nothing accounts for.
func checkArrivals(r *Report, messages map[string]message, arrivals []arrival, attempts []attemptRow, jobErrors map[string][]jobError) (unexplainedIDs []string) {
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
	resentAt := make(map[string]time.Time)
	for _, w := range r.resent {
		resentAt[w.webhookID] = w.resentAt
	}
	for id, left := range unrecorded {
		slices.SortFunc(left, func(a, b arrival) int { return a.at.Compare(b.at) })
		available := slices.Clone(jobErrors[id])
		for _, a := range left {
			r.Unrecorded++
			if at, ok := resentAt[id]; ok && !a.at.After(at) {
				// In flight when its delivery was resent: the resend's
				// generation fenced it out (replay.ResendTx).
				r.UnrecordedResent++
				continue
			}
			i := slices.IndexFunc(available, func(e jobError) bool { return e.explains(a.at, r.Config.SenderTimeout) })
			if i < 0 {
				unexplained = append(unexplained, fmt.Sprintf("%s at %s (%s)", a.webhookID, a.at.Format(time.RFC3339Nano), a.answer()))
				if !slices.Contains(unexplainedIDs, a.webhookID) {
					unexplainedIDs = append(unexplainedIDs, a.webhookID)
				}
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
	return unexplainedIDs
}

// describeJobs adds to r's problems every delivery job of the first
// maxExamples of webhookIDs, as River holds them at the end of the run, so
// that a run that could not account for a request says which job runs
// there were without its databases having been kept.
func describeJobs(ctx context.Context, r *Report, herald *pgxpool.Pool, webhookIDs []string) error {
	slices.Sort(webhookIDs)
	var ids []uuid.UUID
	for _, w := range webhookIDs[:min(len(webhookIDs), maxExamples)] {
		id, err := uuid.Parse(strings.TrimPrefix(w, "msg_"))
		if err != nil {
			return fmt.Errorf("webhook id %q: %w", w, err)
		}
		ids = append(ids, id)
	}
	rows, err := herald.Query(ctx, selectJobsOfMessages, ids, deliveryKinds)
	if err != nil {
		return fmt.Errorf("read the jobs of unaccounted requests: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("read the jobs of unaccounted requests: %w", err)
	}
	r.problem("their deliveries' jobs: %s", strings.Join(jobs, "; "))
	return nil
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
	case Gone:
		return answeredGone
	case Defer:
		return answeredDefer
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
	case Gone:
		return at.outcome == string(delivery.EndpointGone) && at.status == http.StatusGone
	case Defer:
		return retried && at.status == http.StatusTooManyRequests
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
// The poison event must be a dead letter, never applied, and the only
// dead letter.
func checkLedger(ctx context.Context, r *Report, consumer *pgxpool.Pool, messages map[string]message, poison *poisoned) error {
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
		if poison != nil && id == poison.webhookID {
			if n := applied[id]; n > 0 {
				r.problem("the poison event %s was applied %d times; it kills the process that applies it", id, n)
			}
			continue
		}
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
	rows, err = consumer.Query(ctx, selectDeadLetterIDs)
	if err != nil {
		return fmt.Errorf("read the dead letters: %w", err)
	}
	var others []string
	var attempts int
	_, err = pgx.ForEachRow(rows, []any{&id, &attempts}, func() error {
		r.DeadLetters++
		if poison != nil && id == poison.webhookID {
			r.PoisonDead, r.PoisonAttempts = true, attempts
			return nil
		}
		others = append(others, id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the dead letters: %w", err)
	}
	if len(others) > 0 {
		r.problem("%d events other than the poison one are dead letters in the consumer's inbox, e.g. %s", len(others), examples(others))
	}
	if poison != nil && !r.PoisonDead {
		r.problem("the poison event %s is not a dead letter in the consumer's inbox", poison.webhookID)
	}
	if poison != nil && r.WorkerCrashes == 0 {
		r.problem("the consumer's worker process never died on the poison event %s", poison.webhookID)
	}
	return nil
}

// checkObjects compares each object's sequence number at the producer,
// its version in Herald and its state at the consumer. The poison event
// never applies: when it is its object's latest, the one before is
// expected.
func checkObjects(ctx context.Context, r *Report, herald, consumer *pgxpool.Pool, poison *poisoned) error {
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
		want := state{version: version, seq: seq}
		if poison != nil && poison.objectID == id && poison.version == version {
			want = state{version: version - 1, seq: seq - 1}
		}
		if version == seq && got == want {
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
