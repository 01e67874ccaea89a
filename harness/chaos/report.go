package chaos

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Report is what a run did and what its checks found.
type Report struct {
	// Config is the run's configuration.
	Config Config
	// Outage says what the outage did; empty when there was none.
	Outage string
	// Runtime is the run's wall-clock time, from opening the databases to
	// the last check.
	Runtime time.Duration

	// Events is how many events the producers committed.
	Events int
	// RolledBack is how many events were published in transactions that
	// rolled back.
	RolledBack int
	// ProducerRetries counts producer transactions that failed (the
	// database was away) and were tried again.
	ProducerRetries int

	// Kills is how many times a dispatcher was killed with SIGKILL, and
	// Restarts how many times one was started again.
	Kills, Restarts int
	// PostgresRestarts counts the outages and Downtime adds up how long
	// they lasted.
	PostgresRestarts int
	Downtime         time.Duration

	// Attempts counts the rows of the dispatchers' attempt log;
	// AttemptsSucceeded those that succeeded, Retries those that failed and
	// scheduled a retry, AttemptsUnsent those that failed before a request
	// was made (the signing secret could not be read) and AttemptsLost
	// those that failed without an answer and never reached the consumer's
	// handler.
	Attempts, AttemptsSucceeded, Retries, AttemptsUnsent, AttemptsLost int
	// Requests counts the requests the consumer received, and RequestsBy
	// splits them by what the consumer did with them.
	Requests   int
	RequestsBy map[string]int
	// Unrecorded counts requests no attempt row accounts for: attempts cut
	// short before they were recorded, because their dispatcher was killed
	// (UnrecordedKill: River rescued the job) or the database failed
	// (UnrecordedOutage: River recorded the job's error), or their delivery
	// was resent while they were in flight (UnrecordedResent: the resend's
	// generation fenced them out).
	Unrecorded, UnrecordedKill, UnrecordedOutage, UnrecordedResent int

	// DuplicatesDelivered counts requests carrying an event the consumer's
	// inbox already held; DuplicatesAbsorbed those of them that changed
	// nothing.
	DuplicatesDelivered, DuplicatesAbsorbed int
	// AppliedOnce, AppliedTwice and Lost count committed events by how
	// often the consumer's ledger shows them applied: once, more, never.
	AppliedOnce, AppliedTwice, Lost int
	// Objects counts the producer's objects and ObjectsLatest those whose
	// state at the consumer is their latest version.
	Objects, ObjectsLatest int
	// Deliveries counts Herald's deliveries by status.
	Deliveries map[string]int
	// Jobs counts the delivery jobs in River by state.
	Jobs map[string]int

	// GoneRequests counts the requests the second endpoint answered with
	// 410 Gone, GoneAttempts the attempt rows that recorded one (each
	// disables the endpoint), GoneDeliveries that endpoint's deliveries and
	// GoneSucceeded those of them that succeeded in the end. Replayed is
	// how many deliveries the only_failed replay after its enabling
	// covered.
	GoneRequests, GoneAttempts, GoneDeliveries, GoneSucceeded, Replayed int
	// OrderedEvents counts the events of the third endpoint (ordering
	// object), OrderedRequests the requests it got, OutOfOrder those of
	// them sent before a lower version of their object was answered 2xx
	// or after a higher one was, and OrderedGivenUp its deliveries given
	// up (the only gaps allowed).
	OrderedEvents, OrderedRequests, OutOfOrder, OrderedGivenUp int
	// Resends counts the pending deliveries resent, ResentSucceeded those
	// of them that succeeded.
	Resends, ResentSucceeded int
	// ForcedEnds counts the delivery jobs ended by force, ForcedRecovered
	// those whose delivery got a new job from the reconciler and
	// succeeded.
	ForcedEnds, ForcedRecovered int
	// BlackHoles counts the black holes of a dispatcher's database
	// connections; BlackHoleRecovery is how long after new connections
	// worked again that dispatcher started a job, RecoveryBound the most
	// dispatcher.RecoveryBound allows.
	BlackHoles                       int
	BlackHoleRecovery, RecoveryBound time.Duration
	// WorkerCrashes counts the deaths of the consumer's worker process on
	// the poison event. Poison is that event's webhook ID, PoisonDead
	// whether it is a dead letter and PoisonAttempts its attempts;
	// DeadLetters counts every dead letter.
	WorkerCrashes  int
	Poison         string
	PoisonDead     bool
	PoisonAttempts int
	DeadLetters    int
	// Relayed counts, in split mode, the messages Herald holds from the
	// producer's database; zero in single-database mode.
	Relayed int
	// InFlightAtOnce counts the requests of a delivery that arrived at the
	// consumer while an earlier one of the same delivery was still in
	// flight there.
	InFlightAtOnce int

	// What the run did, for the checks.
	replayID uuid.UUID
	resent   []waitingDelivery
	forced   []forcedEnd

	// Problems lists every check that failed; empty means the run passed.
	Problems []string
}

func (r *Report) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// The ways the consumer answered a request, as RequestsBy counts them.
const (
	answeredOK       = "stored, answered 200"
	answered500      = "answered 500 (injected)"
	answeredHang     = "held past the sender's timeout (injected)"
	answeredDrop     = "stored, then dropped the connection (injected)"
	answeredLate     = "stored, answered after the sender's timeout (injected)"
	answeredDatabase = "answered 503: not stored (database away, or sender gone)"
	answeredOther    = "answered %d"
	answeredGone     = "answered 410 Gone (the second endpoint, until it is taken back)"
	answeredDefer    = "answered 429, Retry-After 20 s (deliveries to resend and whose jobs to end)"
)

// WriteTable writes the report as a table, then the problems if any.
func (r *Report) WriteTable(w io.Writer) error {
	var rows [][3]string
	row := func(label string, value any, note string) {
		rows = append(rows, [3]string{label, fmt.Sprint(value), note})
	}
	row("events committed", r.Events, fmt.Sprintf("by %d producers, about %d objects", r.Config.Producers, r.Objects))
	row("events rolled back", r.RolledBack, "published in transactions that rolled back: none may arrive")
	row("producer transactions retried", r.ProducerRetries, "after a database error")
	if r.Relayed > 0 {
		row("split mode: messages relayed", r.Relayed, "from the producer's own database (outbox only) into Herald's by the dispatchers' relays, killed with them")
	}
	row("dispatcher processes", r.Config.Dispatchers, "separate processes of cmd/dispatcher")
	row("dispatcher kills (SIGKILL)", r.Kills, "")
	row("dispatcher restarts", r.Restarts, "")
	outage := "none"
	if r.PostgresRestarts > 0 {
		outage = fmt.Sprintf("%s; away %s", r.Outage, r.Downtime.Round(100*time.Millisecond))
	}
	row("postgres restarts", r.PostgresRestarts, outage)
	if r.Config.GoneShare > 0 {
		row("endpoint gone (410), re-enabled, replayed", r.GoneDeliveries, fmt.Sprintf("deliveries to the second endpoint: %d requests answered 410, %d attempts recorded 410 (the first disabled it); an only_failed replay after enabling it covered %d; %d succeeded in the end", r.GoneRequests, r.GoneAttempts, r.Replayed, r.GoneSucceeded))
	}
	if r.Config.OrderedShare > 0 {
		row("ordered endpoint (ordering: object)", r.OrderedEvents, fmt.Sprintf("events to the third endpoint, under the same faults: %d requests; %d out of version order; %d given up", r.OrderedRequests, r.OutOfOrder, r.OrderedGivenUp))
	}
	row("pending deliveries resent", r.Resends, fmt.Sprintf("in flight or waiting for a retry (replay.ResendTx); %d succeeded", r.ResentSucceeded))
	row("delivery jobs ended by force", r.ForcedEnds, fmt.Sprintf("waiting for a retry, cancelled (JobCancel) or set to discarded (UPDATE); %d given a new job by the reconciler and succeeded", r.ForcedRecovered))
	if r.BlackHoles > 0 {
		row("dispatcher database black holes", r.BlackHoles, fmt.Sprintf("dispatcher %d's connections silent for %s, nothing closed; it started a job again %s after new connections worked (dispatcher.RecoveryBound %s)",
			blackHoled, r.Config.BlackHole, r.BlackHoleRecovery.Round(100*time.Millisecond), r.RecoveryBound.Round(100*time.Millisecond)))
	}
	if r.Config.Poison >= 0 {
		row("consumer worker crashes (poison event)", r.WorkerCrashes, fmt.Sprintf("the worker process exits on event %d and is started again; lease %s, %d attempts", r.Config.Poison, r.Config.ConsumerLease, r.Config.ConsumerMaxAttempts))
		row("  poison event a dead letter", fmt.Sprint(r.PoisonDead), fmt.Sprintf("after %d attempts; dead letters in all: %d", r.PoisonAttempts, r.DeadLetters))
	}
	row("attempts in the attempt log", r.Attempts, "")
	row("  succeeded", r.AttemptsSucceeded, "")
	row("  failed, retried", r.Retries, fmt.Sprintf("%d sent nothing (the signing secret could not be read), %d timed out before reaching the consumer", r.AttemptsUnsent, r.AttemptsLost))
	row("requests at the consumer", r.Requests, "")
	for _, label := range slices.Sorted(maps.Keys(r.RequestsBy)) {
		row("  "+label, r.RequestsBy[label], "")
	}
	row("  not in the attempt log", r.Unrecorded, fmt.Sprintf("sent, then cut short before being recorded: dispatcher killed (%d, River rescued the job), database away or black-holed (%d, the job errored), resent while in flight (%d, fenced out)", r.UnrecordedKill, r.UnrecordedOutage, r.UnrecordedResent))
	row("duplicates delivered", r.DuplicatesDelivered, "requests for an event the consumer's inbox already held")
	row("duplicates absorbed", r.DuplicatesAbsorbed, "of those, changed nothing")
	row("two attempts in flight at once", r.InFlightAtOnce, "requests of one delivery that arrived while an earlier one was still in flight at the consumer")
	applied := "committed events in the consumer's ledger once"
	if r.Config.Poison >= 0 {
		applied += ", every one but the poison event"
	}
	row("applied exactly once", r.AppliedOnce, applied)
	row("applied twice or more", r.AppliedTwice, "")
	row("lost", r.Lost, "committed events never applied")
	row("objects at their latest version", fmt.Sprintf("%d/%d", r.ObjectsLatest, r.Objects), "")
	row("deliveries pending", r.Deliveries["pending"], statusText(r.Deliveries))
	row("runtime", r.Runtime.Round(time.Second), "")

	labelWidth, valueWidth := 0, 0
	for _, rw := range rows {
		labelWidth = max(labelWidth, len(rw[0]))
		valueWidth = max(valueWidth, len(rw[1]))
	}
	var b strings.Builder
	for _, rw := range rows {
		line := fmt.Sprintf("%-*s  %*s  %s", labelWidth, rw[0], valueWidth, rw[1], rw[2])
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	if len(r.Problems) == 0 {
		b.WriteString("\nevery check passed\n")
	} else {
		fmt.Fprintf(&b, "\n%d problems:\n- %s\n", len(r.Problems), strings.Join(r.Problems, "\n- "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func statusText(counts map[string]int) string {
	var parts []string
	for _, status := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", status, counts[status]))
	}
	return "deliveries by status: " + strings.Join(parts, ", ")
}
