package soak

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/heraldhq/herald/retention"
)

// PassOutcome is what a maintenance pass did with one partition set past
// retention.
type PassOutcome struct {
	// At is when the pass reported it.
	At time.Time
	// Suffix names the set (herald.history_partitions).
	Suffix string
	// Outcome is retention.Dropped, or why the set was kept.
	Outcome retention.Outcome
}

// The messages retention.Maintainer logs for a set past retention.
const (
	droppedMessage = "history partitions dropped"
	keptMessage    = "history partitions past retention kept"
)

// readOutcomes reads the outcomes a dispatcher's JSON log reports.
func readOutcomes(r io.Reader) ([]PassOutcome, error) {
	var out []PassOutcome
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Time   time.Time `json:"time"`
			Msg    string    `json:"msg"`
			Suffix string    `json:"suffix"`
			Reason string    `json:"reason"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue // not a log line of slog's (a panic's trace, say)
		}
		switch line.Msg {
		case droppedMessage:
			out = append(out, PassOutcome{At: line.Time, Suffix: line.Suffix, Outcome: retention.Dropped})
		case keptMessage:
			out = append(out, PassOutcome{At: line.Time, Suffix: line.Suffix, Outcome: retention.Outcome(line.Reason)})
		}
	}
	return out, sc.Err()
}

// readLogOutcomes reads the outcomes of every log file in paths, in time
// order.
func readLogOutcomes(paths []string) ([]PassOutcome, error) {
	var all []PassOutcome
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		outcomes, err := readOutcomes(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		all = append(all, outcomes...)
	}
	sortOutcomes(all)
	return all, nil
}

// reportOutcomes turns a pass's report, made at, into outcomes.
func reportOutcomes(rep retention.Report, at time.Time) []PassOutcome {
	out := make([]PassOutcome, 0, len(rep.Due))
	for suffix, outcome := range rep.Due {
		out = append(out, PassOutcome{At: at, Suffix: suffix, Outcome: outcome})
	}
	sortOutcomes(out)
	return out
}

func sortOutcomes(out []PassOutcome) {
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].Suffix < out[j].Suffix
	})
}
