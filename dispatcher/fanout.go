package dispatcher

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/enabling"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/unnest"
)

// drain runs fan-out transactions until one finds the outbox empty. Between
// them it keeps the leader's connection l alive (listener.keepAlive), and
// stops when it failed: this dispatcher no longer leads. A nil l drains
// without.
func (d *Dispatcher) drain(ctx context.Context, l *listener) (claimed int) {
	for ctx.Err() == nil {
		if l != nil {
			if err := l.keepAlive(ctx); err != nil {
				d.logger.ErrorContext(ctx, "fan out messages: the fan-out leader's connection failed", "error", err)
				return claimed
			}
		}
		n, more, err := d.fanOut(ctx)
		claimed += n
		if err != nil {
			if ctx.Err() == nil {
				d.logger.ErrorContext(ctx, "fan out messages", "error", err)
			}
			return claimed
		}
		if !more {
			return claimed
		}
	}
	return claimed
}

// FanOutLimit bounds one fan-out transaction when a backlog is waiting: it
// claims Config.BatchSize messages at a time until it has claimed
// FanOutLimit messages or created FanOutLimit deliveries, or the outbox is
// empty. The first attempts to an endpoint go in jobs of up to
// delivery.MaxBatch of that transaction's deliveries, and a job costs River
// the same whatever its size, so a backlog spread over many endpoints needs
// transactions this large for its jobs to fill up. In the burst benchmark
// (50 endpoints) one claim of 500 messages made jobs of 10 deliveries; see
// docs/benchmarks.md. Counting messages too bounds a backlog of messages
// that no endpoint subscribes to, which create no deliveries.
const FanOutLimit = 5000

// WideFanOutLimit bounds a fan-out transaction of wide messages, those
// with several endpoints each (more than two deliveries a message): it
// commits once it has created this many deliveries, and no claim takes
// more than this many (see claimMessages: a tenant's share of a claim is
// counted in deliveries). Every message claimed waits for its
// transaction's commit, so one transaction making 12,000 deliveries for a
// tenant with 500 endpoints (24 of its messages, its share of a claim
// beside 20 other tenants) had held the others' messages in it for
// seconds (issue 18's noisy-tenant benchmark). Narrow messages, one
// endpoint each as in a burst to many tenants, still fill FanOutLimit, and
// a wide backlog's jobs still carry WideFanOutLimit / endpoints deliveries
// each.
const WideFanOutLimit = 2000

// SharedWideFanOutLimit is WideFanOutLimit for a transaction that holds
// more than one tenant's deliveries: the others' messages in it wait for
// its commit, so it commits sooner. In issue 18's noisy-tenant benchmark
// every claim held one message of the noisy tenant's (500 deliveries)
// beside the others' few: committing after each such claim rather than
// after four took the others' p99 down by about a third
// (docs/benchmarks.md). One tenant's wide backlog alone
// still fills WideFanOutLimit, whose jobs carry four times as many
// deliveries each.
const SharedWideFanOutLimit = 500

// wideEnough reports whether a fan-out transaction that created created
// deliveries for claimed messages of tenants tenants is wide (more than two
// deliveries a message) and has made enough of them to commit.
func wideEnough(created, claimed, tenants int) bool {
	limit := WideFanOutLimit
	if tenants > 1 {
		limit = SharedWideFanOutLimit
	}
	return created > 2*claimed && created >= limit
}

// rollbackTimeout bounds rolling back a fan-out transaction: one round trip.
const rollbackTimeout = 5 * time.Second

// fanOut claims undispatched messages and, in one transaction, creates
// their deliveries and River jobs and marks them dispatched. It returns
// how many messages it claimed and whether more may be waiting. The
// transaction must end within the fan-out timeout (Config.FanOutTimeout),
// or it is rolled back and its messages are claimed again by the next.
func (d *Dispatcher) fanOut(ctx context.Context) (claimed int, more bool, err error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d.fanOutTimeout)
	defer cancel()
	tx, err := beginFanOut(ctx, d.pool)
	if err != nil {
		return 0, false, err
	}
	defer func() {
		// Its own deadline: the rollback must run after the fan-out's ran out.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = tx.Rollback(ctx)
	}()

	var (
		groups  jobGroups
		created int
		traced  []tracedMessage
	)
	for claimed < FanOutLimit && created < FanOutLimit {
		batch, err := claim(ctx, tx, d.batchSize, min(FanOutLimit-created, WideFanOutLimit), d.filters)
		if err != nil {
			return 0, false, err
		}
		claimed += batch.messages
		traced = append(traced, batch.traced...)
		more = batch.more
		if len(batch.deliveries) > 0 {
			n, err := createDeliveries(ctx, tx, batch, &groups)
			if err != nil {
				return 0, false, err
			}
			created += n
		}
		if !more || wideEnough(created, claimed, len(groups.perTenant)) {
			break
		}
	}
	if claimed == 0 {
		return 0, false, nil
	}
	jobs := groups.jobs(d.worker.Answering)
	if len(groups.ordered) > 0 {
		// All at once, so that the lines are locked in order: a fan-out
		// transaction locking them batch by batch could deadlock with
		// another doing the same.
		heads, err := delivery.JoinLines(ctx, tx, groups.ordered, delivery.TriggerScheduled, true)
		if err != nil {
			return 0, false, err
		}
		jobs = append(jobs, delivery.LineJobs(heads)...)
	}
	if len(jobs) > 0 {
		if _, err := d.river.InsertManyFastTx(ctx, tx, jobs); err != nil {
			return 0, false, fmt.Errorf("insert %d delivery jobs: %w", len(jobs), err)
		}
		if _, err := tx.Exec(ctx, notifyJobsInserted, riverInsertChannel, riverInsertPayload); err != nil {
			return 0, false, fmt.Errorf("notify the delivery jobs: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, false, fmt.Errorf("commit fan-out: %w", err)
	}
	d.traceFanOut(start, claimed, created, traced)
	return claimed, more, nil
}

// beginFanOut begins a fan-out transaction and takes the enabling
// barrier (package enabling) before it reads any endpoint, so that an
// endpoint enabled meanwhile waits for its skipped deliveries.
func beginFanOut(ctx context.Context, pool *pgxpool.Pool) (pgx.Tx, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin fan-out: %w", err)
	}
	if _, err := tx.Exec(ctx, enabling.FanOut); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("begin fan-out: wait for an endpoint being enabled: %w", err)
	}
	return tx, nil
}

// createDeliveries inserts batch's deliveries, adds the pending ones to
// groups and returns how many it inserted.
func createDeliveries(ctx context.Context, tx pgx.Tx, batch claimed, groups *jobGroups) (int, error) {
	rows, err := tx.Query(ctx, insertDeliveries, unnest.Arrays(batch.deliveries, newDeliveryColumns...)...)
	if err != nil {
		return 0, fmt.Errorf("insert deliveries: %w", err)
	}
	var (
		id, endpointID uuid.UUID
		status         deliverystatus.Status
		tenantOf       = make(map[uuid.UUID]string)
	)
	for _, d := range batch.deliveries {
		tenantOf[d.endpointID] = d.tenantID
	}
	n, err := pgx.ForEachRow(rows, []any{&id, &endpointID, &status}, func() error {
		switch {
		case status != deliverystatus.Pending:
		case batch.ordered[endpointID]:
			groups.ordered = append(groups.ordered, id)
		default:
			groups.add(tenantOf[endpointID], endpointID, id)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("insert deliveries: %w", err)
	}
	return int(n.RowsAffected()), nil
}

// jobGroups gathers a fan-out transaction's new deliveries by endpoint, in
// the order the endpoints first appear, so that their first attempts go in
// delivery.BatchArgs jobs: River then fetches and completes one job per
// endpoint and batch instead of one per delivery.
type jobGroups struct {
	order []uuid.UUID
	ids   map[uuid.UUID][]uuid.UUID
	// tenant holds each endpoint's tenant, and perTenant how many of the
	// deliveries are each tenant's.
	tenant    map[uuid.UUID]string
	perTenant map[string]int
	// ordered are the new deliveries of ordered endpoints, which join their
	// lines (delivery.JoinLines) at the end of the transaction: only the
	// heads get jobs.
	ordered []uuid.UUID
}

func (g *jobGroups) add(tenant string, endpointID, deliveryID uuid.UUID) {
	if g.ids == nil {
		g.ids = make(map[uuid.UUID][]uuid.UUID)
		g.tenant = make(map[uuid.UUID]string)
		g.perTenant = make(map[string]int)
	}
	if _, ok := g.ids[endpointID]; !ok {
		g.order = append(g.order, endpointID)
		g.tenant[endpointID] = tenant
	}
	g.ids[endpointID] = append(g.ids[endpointID], deliveryID)
	g.perTenant[tenant]++
}

// FloodPriority is the River priority (lower than the default, 1) of the
// jobs of a tenant flooding a fan-out transaction: one with more than
// twice as many new deliveries as the other tenants in it have on
// average. River fetches every available job of priority 1 before any of
// priority 2, so a tenant that fans out a flood, to many endpoints or
// many messages, has its jobs wait behind the other tenants' instead of
// ahead of them. Jobs keep their priority through snoozes; retries and
// hand-offs get the default again. The jobs of a flooding tenant to its
// endpoints that answer (delivery.Worker.Answering) keep the default unless
// those alone would flood: a tenant flooding endpoints that hang had its
// healthy endpoint's jobs queue behind its own flood's held-back jobs,
// 20 s behind all through the noisy-tenant-shared benchmark, although the
// endpoint answered each request at once. An even burst of many tenants floods
// nothing, nor does a tenant alone in the transaction unless it made
// FloodDeliveries: a wide fan-out committed while the other tenants had
// nothing waiting is still a flood to the messages they publish next
// (issue 18's noisy tenant, whose transactions of 2,000 deliveries to its
// 500 hanging endpoints came between the others' and kept priority 1).
const FloodPriority = 2

// FloodDeliveries is how many new deliveries of one tenant in a fan-out
// transaction make it flooding whatever the other tenants have: half of
// WideFanOutLimit. A narrow burst's transactions hold FanOutLimit, so a
// tenant's burst to many endpoints alone gets FloodPriority too, which
// changes nothing while no other tenant has jobs waiting.
const FloodDeliveries = WideFanOutLimit / 2

// MinFloodDeliveries is how many new deliveries of one tenant in a fan-out
// transaction it takes to flood it at all. At a few deliveries a tenant,
// twice the others' average is the chance of who published in the same
// few milliseconds, and the jobs of the tenant that drew more waited
// behind every job of FloodPriority: in the full-size noisy-tenant-shared
// benchmark, whenever the flooding tenant's healthy endpoint had two or
// three deliveries in a transaction where the other tenants had one each,
// they arrived 20 s late, behind the flood. Fewer jobs than this ahead of
// the others cost them a few milliseconds.
const MinFloodDeliveries = 16

// flooding reports whether mine of tenant's deliveries in g, which holds
// total deliveries, would flood it: FloodDeliveries of them, or at least
// MinFloodDeliveries and more than twice the other tenants' average.
func (g *jobGroups) flooding(tenant string, mine, total int) bool {
	if mine >= FloodDeliveries {
		return true
	}
	if mine < MinFloodDeliveries {
		return false
	}
	others := len(g.perTenant) - 1
	if others == 0 {
		return false
	}
	return mine*others > 2*(total-g.perTenant[tenant])
}

// jobs returns one job per endpoint and delivery.MaxBatch deliveries,
// taking the endpoints in turn so that one endpoint's many jobs do not queue
// ahead of the others'; a lone delivery gets a delivery.Args job, which
// costs no more: its first, so Alone, as a batch job of new deliveries. A
// flooding tenant's jobs get FloodPriority, but for those to endpoints
// that answer (answering; nil knows none) while its deliveries to them
// alone would not flood.
func (g *jobGroups) jobs(answering func(endpoint uuid.UUID) bool) []river.InsertManyParams {
	total := 0
	for _, n := range g.perTenant {
		total += n
	}
	answers := make(map[uuid.UUID]bool)
	toAnswering := make(map[string]int)
	for _, endpointID := range g.order {
		if answering != nil && answering(endpointID) {
			answers[endpointID] = true
			toAnswering[g.tenant[endpointID]] += len(g.ids[endpointID])
		}
	}
	// Decided once per endpoint, not per job.
	lowered := make(map[uuid.UUID]bool)
	for _, endpointID := range g.order {
		tenant := g.tenant[endpointID]
		lowered[endpointID] = g.flooding(tenant, g.perTenant[tenant], total) &&
			(!answers[endpointID] || g.flooding(tenant, toAnswering[tenant], total))
	}
	var jobs []river.InsertManyParams
	for start := 0; ; start += delivery.MaxBatch {
		added := false
		for _, endpointID := range g.order {
			all := g.ids[endpointID]
			if start >= len(all) {
				continue
			}
			ids := all[start:min(start+delivery.MaxBatch, len(all))]
			var args river.JobArgs = delivery.BatchArgs{EndpointID: endpointID, DeliveryIDs: ids}
			if len(ids) == 1 {
				args = delivery.Args{DeliveryID: ids[0], EndpointID: endpointID, Trigger: delivery.TriggerScheduled, Alone: true}
			}
			job := river.InsertManyParams{Args: args}
			if lowered[endpointID] {
				job.InsertOpts = &river.InsertOpts{Priority: FloodPriority}
			}
			jobs = append(jobs, job)
			added = true
		}
		if !added {
			return jobs
		}
	}
}

// claimed is one claim of messages: how many, and the deliveries to
// create for them.
type claimed struct {
	messages   int
	deliveries []newDelivery
	// traced are the claimed messages published with a trace context.
	traced []tracedMessage
	// ordered holds the endpoints of deliveries whose ordering is "object".
	ordered map[uuid.UUID]bool
	// more says messages not claimed wait: a tenant had more than its
	// share of the claim, or the claim was full.
	more bool
}

// newDelivery is a delivery to create: a row of insertDeliveries.
type newDelivery struct {
	id         uuid.UUID
	messageID  uuid.UUID
	endpointID uuid.UUID
	tenantID   string
	status     deliverystatus.Status
}

// newDeliveryColumns are the columns of insertDeliveries, in its order.
var newDeliveryColumns = []unnest.Column[newDelivery]{
	unnest.Col(func(d newDelivery) uuid.UUID { return d.id }),
	unnest.Col(func(d newDelivery) uuid.UUID { return d.messageID }),
	unnest.Col(func(d newDelivery) uuid.UUID { return d.endpointID }),
	unnest.Col(func(d newDelivery) string { return d.tenantID }),
	unnest.Col(func(d newDelivery) string { return string(d.status) }),
}

// claim claims up to limit undispatched messages in tx, the tenants' shares
// counted in about deliveries deliveries (see claimMessages), and returns them
// with a delivery to create for each of their subscribed endpoints whose
// filter they pass (filters compiled through filters): a skipped one when
// the endpoint is disabled.
func claim(ctx context.Context, tx pgx.Tx, limit, deliveries int, filters *filterCache) (claimed, error) {
	rows, err := tx.Query(ctx, claimMessages, limit, deliveries)
	if err != nil {
		return claimed{}, fmt.Errorf("claim messages: %w", err)
	}
	var (
		b           claimed
		messageID   uuid.UUID
		tenantID    string
		endpointID  *uuid.UUID
		traceparent *string
		enabled     bool
		ordered     bool
		filterSrc   *string
		body        *string
		seen        = make(map[uuid.UUID]bool)
		current     messageFilter
	)
	_, err = pgx.ForEachRow(rows, []any{&messageID, &tenantID, &traceparent, &endpointID, &enabled, &ordered, &filterSrc, &body, &b.more}, func() error {
		if !seen[messageID] {
			seen[messageID] = true
			b.messages++
			if traceparent != nil {
				b.traced = append(b.traced, tracedMessage{id: messageID, traceparent: *traceparent})
			}
			// The body comes on the message's first row, and only when
			// one of its endpoints has a filter.
			current = messageFilter{cache: filters}
			if body != nil {
				current.body = []byte(*body)
			}
		}
		if endpointID == nil {
			return nil // no endpoint subscribes to it
		}
		if filterSrc != nil && !current.passes(*endpointID, *filterSrc) {
			return nil // filtered out: no delivery
		}
		if traceparent != nil {
			b.traced[len(b.traced)-1].endpoints++
		}
		// The delivery lives in its message's partitions (package historyid).
		id, err := historyid.Child(messageID)
		if err != nil {
			return fmt.Errorf("delivery id: %w", err)
		}
		status := deliverystatus.Pending
		switch {
		case ordered:
			// Disabling holds an ordered endpoint's lines: the delivery
			// joins its line, which resumes when the endpoint is enabled.
			if b.ordered == nil {
				b.ordered = make(map[uuid.UUID]bool)
			}
			b.ordered[*endpointID] = true
		case !enabled:
			status = deliverystatus.Skipped
		}
		b.deliveries = append(b.deliveries, newDelivery{id: id, messageID: messageID, endpointID: *endpointID, tenantID: tenantID, status: status})
		return nil
	})
	if err != nil {
		return claimed{}, fmt.Errorf("claim messages: %w", err)
	}
	b.more = b.more || b.messages == limit
	return b, nil
}
