package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"time"
)

// Report is every table of a run.
type Report struct {
	Config Config
	// Environment lines printed under the title: machine, Go, Postgres,
	// date. The caller fills them in; the simulation does not guess.
	Environment []string
	// OneAtATime is the handler table with one delivery in flight at a
	// time (a concurrent pair still overlaps): the article's order.
	OneAtATime HandlerTable
	// Racing is the handler table with every delivery that the plan's
	// order allows in flight at once.
	Racing    HandlerTable
	Crash     []CrashRow
	Retention []RetentionRow
	Jitter    []JitterRow
	// Elapsed is how long Run took.
	Elapsed time.Duration
}

// Run runs every experiment of cfg: the handler table twice (one delivery
// at a time, then racing), the crash table, the retention table and the
// jitter table. newDB provides the databases (see [NewDatabase]).
func Run(ctx context.Context, cfg Config, newDB NewDatabase) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	start := time.Now()
	r := Report{Config: cfg}
	one := cfg
	one.MaxInFlight = 1
	var err error
	if r.OneAtATime, err = RunHandlers(ctx, one, prefixed(newDB, "one_")); err != nil {
		return Report{}, fmt.Errorf("handler table, one at a time: %w", err)
	}
	if r.Racing, err = RunHandlers(ctx, cfg, prefixed(newDB, "racing_")); err != nil {
		return Report{}, fmt.Errorf("handler table, racing: %w", err)
	}
	if r.Crash, err = RunCrash(ctx, cfg, newDB); err != nil {
		return Report{}, fmt.Errorf("crash table: %w", err)
	}
	r.Retention = Retention(cfg)
	r.Jitter = Jitter(cfg)
	r.Elapsed = time.Since(start)
	return r, nil
}

func prefixed(newDB NewDatabase, prefix string) NewDatabase {
	return func(ctx context.Context, name string) (string, error) { return newDB(ctx, prefix+name) }
}

// WriteText prints the report as plain text tables.
func (r Report) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	c := r.Config
	fmt.Fprintln(b, "sim: receiver designs under at-least-once delivery (simulation, synthetic data)")
	fmt.Fprintln(b, "seed:", c.Seed)
	for _, line := range r.Environment {
		fmt.Fprintln(b, line)
	}
	t := r.Racing
	fmt.Fprintf(b, "events: %d (%d credit, %d plan), accounts: %d, same-second plan pairs: %d\n",
		t.Events, t.Credits, t.Plans, t.Accounts, t.SameSecondPairs)
	fmt.Fprintf(b, "chances: duplicate %v, response lost after commit %v (every attempt), concurrent redelivery %v, shuffled %v (window %d)\n",
		c.Duplicate, c.LostResponse, c.Concurrent, c.Shuffle, c.ShuffleWindow)

	fmt.Fprintln(b, "postgres sessions: synchronous_commit=off (a commit does not wait for the WAL flush; no experiment crashes the server)")

	fmt.Fprintln(b, "\n== handlers, one delivery at a time (a concurrent pair still arrives together)")
	writeHandlerRows(b, r.OneAtATime.Rows)
	fmt.Fprintf(b, "\n== handlers, deliveries racing (sent as soon as within %d positions of every unanswered one; up to %d requests in flight)\n",
		retryMin, peakInFlight(r.Racing.Rows))
	writeHandlerRows(b, r.Racing.Rows)

	for _, table := range []struct {
		name string
		t    HandlerTable
	}{{"one at a time", r.OneAtATime}, {"racing", r.Racing}} {
		if tr := table.t.Traced; tr != nil {
			fmt.Fprintf(b, "\n== traced event %s (%s): add %d credits to %s\n", tr.ID, table.name, tr.Amount, accountID(tr.Account))
			for _, row := range table.t.Rows[:3] {
				fmt.Fprintf(b, "%s: applied %dx\n", row.Design, row.TracedApplied)
				for _, line := range row.Trace {
					fmt.Fprintln(b, "  "+line)
				}
			}
		}
	}
	if t.TieOlder != nil {
		fmt.Fprintf(b, "\n== same-second pairs sent newer-first: %d of %d\n", t.NewerFirst, t.SameSecondPairs)
		o, n := t.TieOlder, t.TieNewer
		fmt.Fprintf(b, "example %s: %s sets %s, %s sets %s, both created %d; sent %s first\n",
			accountID(o.Account), o.ID, planName(o.Version), n.ID, planName(n.Version), o.Created, n.ID)
		fmt.Fprintf(b, "  %-20s %14s %8s\n", "design", "one at a time", "racing")
		for i, row := range r.OneAtATime.Rows {
			fmt.Fprintf(b, "  %-20s %14s %8s\n", row.Design, planName(row.TieAfter), planName(r.Racing.Rows[i].TieAfter))
		}
	}

	fmt.Fprintln(b, "\n== retention: duplicate applies that got past the dedupe store")
	fmt.Fprintf(b, "chances: response lost after processing %v per attempt, later attempt unreachable %v, manual resend %v (1 to 15 days later, where the provider offers resends)\n",
		retentionLost, retentionUnreachable, retentionManual)
	for _, row := range r.Retention {
		for i, ret := range Retentions {
			fmt.Fprintf(b, "%-38s%-15s%8d\n", row.Schedule, ret.Name, row.Through[i])
		}
		fmt.Fprintf(b, "%-38s%-15s%8s\n", row.Schedule, "last retry at", row.LastRetry)
	}

	fmt.Fprintf(b, "\n== crash after the dedupe insert, before the side effect (connection dropped without commit, chance %v per delivery)\n", c.Crash)
	fmt.Fprintf(b, "%-34s%7s%8s%6s%8s%6s%8s%9s\n", "design", "events", "crashes", "keys", "applied", "lost", "ledger", "expected")
	for _, row := range r.Crash {
		fmt.Fprintf(b, "%-34s%7d%8d%6d%8d%6d%8d%9d\n", row.Design, row.Events, row.Crashes, row.Keys, row.Applied, row.Lost, row.Ledger, row.Expected)
	}

	fmt.Fprintf(b, "\n== sender retries: %d failed deliveries, receiver back at t=%d s\n", c.JitterDeliveries, int(recovery/time.Second))
	for _, row := range r.Jitter {
		fmt.Fprintf(b, "%-27s attempts %d, peak per second after recovery %d, last delivered at t=%d s\n",
			row.Name, row.Attempts, row.PeakAfterRecovery, row.LastDelivered.Round(time.Second)/time.Second)
	}
	if r.Elapsed > 0 {
		fmt.Fprintf(b, "\nruntime: %s\n", r.Elapsed.Round(time.Second))
	}
	return b.Flush()
}

func peakInFlight(rows []HandlerRow) int {
	peak := 0
	for _, r := range rows {
		peak = max(peak, r.PeakInFlight)
	}
	return peak
}

func writeHandlerRows(w io.Writer, rows []HandlerRow) {
	fmt.Fprintf(w, "%-20s%11s%6s%11s%14s%6s%13s%12s%10s%10s\n",
		"design", "deliveries", "5xx", "dup events", "extra applies", "lost", "stale writes", "stale accts", "ledger", "expected")
	for _, r := range rows {
		fmt.Fprintf(w, "%-20s%11d%6d%11d%14d%6d%13d%12d%10d%10d\n",
			r.Design, r.Deliveries, r.Errors, r.DuplicatedEvents, r.ExtraApplies, r.Lost, r.StaleWrites, r.StaleAccounts, r.Ledger, r.Expected)
	}
}
