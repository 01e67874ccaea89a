package sim

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/signing"
)

// HandlerRow is one design's result. Duplicates, extra applies and lost
// count credit events, whose effect adds up; stale counts are about plans.
type HandlerRow struct {
	Design string
	// Deliveries is every request answered; Errors those answered 5xx.
	Deliveries, Errors int
	// PeakInFlight is the most requests the sender had in flight at once.
	PeakInFlight int
	// DuplicatedEvents counts credit events applied more than once;
	// ExtraApplies the applies beyond the first.
	DuplicatedEvents, ExtraApplies int
	// Lost counts credit events never applied.
	Lost int
	// StaleWrites counts plan writes that replaced a newer version, at any
	// time in the run; StaleAccounts the accounts whose final plan is not
	// the latest sent.
	StaleWrites, StaleAccounts int
	// Ledger is the sum of all credits; Expected what it should be.
	Ledger, Expected int64

	// Trace lists the traced credit event's attempts and their answers;
	// TracedApplied is how often its effect ran.
	Trace         []string
	TracedApplied int
	// TieAfter is the example account's plan version right after the older
	// update of the traced same-second pair arrived (the newer came first).
	TieAfter int64
}

// HandlerTable is the handler experiment's result.
type HandlerTable struct {
	Events, Credits, Plans, Accounts, SameSecondPairs int
	// Traced is the first credit event whose first delivery came as a
	// concurrent pair.
	Traced *Event
	// NewerFirst counts same-second pairs whose newer update was sent
	// first; TieOlder and TieNewer are the first such pair.
	NewerFirst         int
	TieOlder, TieNewer *Event
	Rows               []HandlerRow
}

// RunHandlers sends the generated events to all designs side by side, every
// design behind its own HTTP server on loopback with its own database
// (from newDB), and counts what each did. The same plan and the same fault
// draws reach every design; only the racing of concurrent requests differs.
func RunHandlers(ctx context.Context, cfg Config, newDB NewDatabase) (HandlerTable, error) {
	if err := cfg.Validate(); err != nil {
		return HandlerTable{}, err
	}
	s := Generate(cfg)
	ds := plan(cfg, s)
	t := HandlerTable{
		Events: len(s.Events), Credits: s.Credits(), Accounts: cfg.Accounts, SameSecondPairs: s.SameSecondPairs(),
	}
	t.Plans = t.Events - t.Credits
	t.Traced = tracedEvent(ds)
	t.NewerFirst, t.TieOlder, t.TieNewer = newerFirst(s, ds)

	secret, err := signing.GenerateHMACSecret()
	if err != nil {
		return HandlerTable{}, err
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	all := designs()
	// Databases are made first, in the caller's goroutine (a test's
	// NewDatabase may stop the test); then the designs run side by side.
	pools := make([]*pgxpool.Pool, 0, len(all))
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	for _, d := range all {
		pool, err := openFresh(ctx, newDB, "handler_"+slug(d.name), cfg)
		if err != nil {
			return HandlerTable{}, err
		}
		pools = append(pools, pool)
	}
	t.Rows = make([]HandlerRow, len(all))
	g, gctx := errgroup.WithContext(ctx)
	for i, d := range all {
		g.Go(func() error {
			row, err := runDesign(gctx, cfg, s, ds, &t, d, pools[i], client, secret)
			if err != nil {
				return fmt.Errorf("design %s: %w", d.name, err)
			}
			t.Rows[i] = row
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return HandlerTable{}, err
	}
	return t, nil
}

func runDesign(ctx context.Context, cfg Config, s Stream, ds []delivery, t *HandlerTable, d design,
	pool *pgxpool.Pool, client *http.Client, secret signing.Secret) (HandlerRow, error) {
	h := &handler{design: d, db: pool, verifier: signing.Verifier{Secrets: []signing.Secret{secret}}, accounts: cfg.Accounts}
	url, stop, err := serve(h)
	if err != nil {
		return HandlerRow{}, err
	}
	defer stop()

	row := HandlerRow{Design: d.name}
	var observeErr error
	snd := &sender{cfg: cfg, client: client, url: url, secret: secret}
	snd.observe = func(dl delivery, n, status int, lost bool) {
		if t.Traced != nil && dl.event == t.Traced {
			line := fmt.Sprintf("%s attempt %d: %d", dl.reason, n, status)
			if lost {
				line += " (response lost, sender retries)"
			}
			row.Trace = append(row.Trace, line)
		}
		if t.TieOlder != nil && dl.event == t.TieOlder && n == 1 && observeErr == nil {
			observeErr = pool.QueryRow(ctx, selectPlan, dl.event.Account).Scan(&row.TieAfter)
		}
	}
	totals, err := snd.run(ctx, ds)
	if err != nil {
		return HandlerRow{}, err
	}
	if err := h.failure(); err != nil {
		return HandlerRow{}, err
	}
	if observeErr != nil {
		return HandlerRow{}, fmt.Errorf("read the tie example's plan: %w", observeErr)
	}
	row.Deliveries, row.Errors, row.PeakInFlight = totals.deliveries, totals.errors, totals.peak
	if err := count(ctx, pool, s, t.Traced, &row); err != nil {
		return HandlerRow{}, err
	}
	return row, nil
}

// count fills a row's results from the design's database.
func count(ctx context.Context, pool *pgxpool.Pool, s Stream, traced *Event, row *HandlerRow) error {
	rows, err := pool.Query(ctx, countApplies)
	if err != nil {
		return fmt.Errorf("count applies: %w", err)
	}
	applies := make(map[string]int)
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return fmt.Errorf("count applies: %w", err)
		}
		applies[id] = n
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("count applies: %w", err)
	}
	for _, e := range s.Events {
		if e.Kind != Credit {
			continue
		}
		row.Expected += e.Amount
		switch n := applies[e.ID]; {
		case n == 0:
			row.Lost++
		case n > 1:
			row.DuplicatedEvents++
			row.ExtraApplies += n - 1
		}
	}
	if traced != nil {
		row.TracedApplied = applies[traced.ID]
	}
	if err := pool.QueryRow(ctx, countStaleWrites).Scan(&row.StaleWrites); err != nil {
		return fmt.Errorf("count stale writes: %w", err)
	}
	if err := pool.QueryRow(ctx, sumCredits).Scan(&row.Ledger); err != nil {
		return fmt.Errorf("sum credits: %w", err)
	}
	plans, err := pool.Query(ctx, selectPlans)
	if err != nil {
		return fmt.Errorf("read plans: %w", err)
	}
	defer plans.Close()
	for plans.Next() {
		var account int
		var version int64
		if err := plans.Scan(&account, &version); err != nil {
			return fmt.Errorf("read plans: %w", err)
		}
		if latest := s.LatestPlan[account]; latest > 0 && version != latest {
			row.StaleAccounts++
		}
	}
	return plans.Err()
}

// tracedEvent is the first credit event in the plan sent as a concurrent
// pair, or nil if there is none.
func tracedEvent(ds []delivery) *Event {
	for _, d := range ds {
		if d.copies == 2 && d.event.Kind == Credit {
			return d.event
		}
	}
	return nil
}

// newerFirst counts the same-second pairs whose newer update leaves first,
// and returns the first such pair.
func newerFirst(s Stream, ds []delivery) (n int, older, newer *Event) {
	firstSent := make(map[string]int, len(s.Events))
	for i, d := range ds {
		if _, ok := firstSent[d.event.ID]; !ok {
			firstSent[d.event.ID] = i
		}
	}
	for i := range s.Events {
		e := &s.Events[i]
		if !e.SameSecond {
			continue
		}
		prev := &s.Events[e.Index-1]
		if firstSent[e.ID] < firstSent[prev.ID] {
			n++
			if older == nil {
				older, newer = prev, e
			}
		}
	}
	return n, older, newer
}

// slug turns a design name into a database name part.
func slug(name string) string {
	r := strings.NewReplacer(" ", "_", "-", "_", ">=", "ge", ">", "gt")
	return strings.Trim(r.Replace(name), "_")
}
