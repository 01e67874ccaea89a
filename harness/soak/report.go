package soak

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/retention"
)

// Report is what a run did and what its checks found.
type Report struct {
	// Config is the run's configuration.
	Config Config
	// Runtime is the run's wall-clock time.
	Runtime time.Duration
	// TrafficFrom and TrafficTo bound the steady traffic, since the run
	// started.
	TrafficFrom, TrafficTo time.Duration

	// Events counts the events published to the main endpoint,
	// BacklogEvents those to the lagging one.
	Events, BacklogEvents int
	// LostMain and LostLagging count the events of each endpoint that it
	// never answered 200; ReceivedTwice those answered 200 more than once
	// (at-least-once delivery: a retry after a lost answer).
	LostMain, LostLagging, ReceivedTwice int
	// Answers counts the receiver's answers: "200", "500" and "held".
	Answers map[string]int

	// Samples is the size curve.
	Samples []Sample
	// Level and DatabaseLevel are the levelling-off check's reading of
	// Samples' HistoryBytes and DatabaseBytes.
	Level, DatabaseLevel Level
	// Drops are the partition sets dropped, in time order.
	Drops []Drop
	// Kept are the sets a pass found past retention and kept, with the
	// first reason given (retention.Pending or retention.Undispatched).
	Kept map[string]retention.Outcome
	// Busy counts the drops put off because their locks were not granted
	// within the lock timeout.
	Busy int

	// PendingAtEnd and UndispatchedAtEnd count what had not settled when
	// the run ended; DefaultRows the rows in the default partitions.
	PendingAtEnd, UndispatchedAtEnd, DefaultRows int

	// Problems lists every check that failed; empty means the run passed.
	Problems []string
}

// WriteTable writes the size curve, the dropped sets and the checks.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "size curve (every %s; history = every partition of messages, deliveries, attempts, replay_deliveries):\n", r.Config.Sample)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "elapsed\tphase\tpublished\thistory MB\triver_job MB\tdatabase MB\tsets\tpending\tundispatched\t")
	for _, s := range r.Samples {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t\n", s.Elapsed.Round(time.Second), s.Phase, s.Published,
			mb(s.HistoryBytes), mb(s.RiverJobBytes), mb(s.DatabaseBytes), s.Partitions, s.Pending, s.Undispatched)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\npartition sets dropped (%d; %d put off as busy):\n", len(r.Drops), r.Busy)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "elapsed\tset\tduring traffic\tpending elsewhere after\tkept before")
	for _, d := range r.Drops {
		kept := string(d.KeptBefore)
		if kept == "" {
			kept = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%t\t%d\t%s\n", d.Elapsed.Round(time.Second), d.Suffix, d.Publishing, d.PendingAfter, kept)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	inFlight := 0
	for _, d := range r.Drops {
		if d.InFlight() {
			inFlight++
		}
	}
	fmt.Fprintf(&b, "\ntraffic: from %s to %s; %d events to the main endpoint, %d to the lagging one\n",
		r.TrafficFrom.Round(time.Second), r.TrafficTo.Round(time.Second), r.Events, r.BacklogEvents)
	fmt.Fprintf(&b, "receiver answers: %s\n", formatCounts(r.Answers))
	checked := "not checked in this configuration"
	if r.Config.LevelTolerance > 0 {
		checked = fmt.Sprintf("at most %.2f allowed; growing without retention, history's would be 1.50", 1+r.Config.LevelTolerance)
	}
	fmt.Fprintf(&b, "levelled off: largest size in the traffic's middle third, in its last third: history %.1f MB, %.1f MB (ratio %.2f); database %.1f MB, %.1f MB (ratio %.2f); %s\n",
		mb(r.Level.MiddleMax), mb(r.Level.LastMax), r.Level.Ratio(), mb(r.DatabaseLevel.MiddleMax), mb(r.DatabaseLevel.LastMax), r.DatabaseLevel.Ratio(), checked)
	fmt.Fprintf(&b, "dropped while the traffic ran and deliveries were pending: %d (at least %d expected)\n", inFlight, r.Config.MinDroppedInFlight)
	fmt.Fprintf(&b, "kept past retention until settled: %d %s (at least %d expected)\n", len(r.Kept), formatKept(r.Kept), r.Config.MinKeptPending)
	fmt.Fprintf(&b, "lost: %d of %d (main), %d of %d (lagging); received more than once: %d\n", r.LostMain, r.Events, r.LostLagging, r.BacklogEvents, r.ReceivedTwice)
	fmt.Fprintf(&b, "at the end: %d deliveries pending, %d messages undispatched, %d rows in the default partitions\n", r.PendingAtEnd, r.UndispatchedAtEnd, r.DefaultRows)
	fmt.Fprintf(&b, "runtime: %s\n", r.Runtime.Round(time.Second))
	if len(r.Problems) == 0 {
		fmt.Fprintln(&b, "\nresult: PASS")
	} else {
		fmt.Fprintln(&b, "\nresult: FAIL")
		for _, p := range r.Problems {
			fmt.Fprintln(&b, "  - "+p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func formatKept(m map[string]retention.Outcome) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s (%s)", k, m[k]))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
