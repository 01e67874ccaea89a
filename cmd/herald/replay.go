package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/heraldhq/herald/client"
)

var replayCommand = &command{
	tenant: true, usage: "<endpoint-id>", args: 1,
	help: "re-send an endpoint's deliveries since a time, with a progress bar until 100%",
	flags: func(fs *flag.FlagSet) {
		fs.String("since", "", "RFC 3339 time, e.g. 2026-12-01T00:00:00Z, or a duration ago, e.g. 24h (required)")
		fs.String("until", "", "end of the range, exclusive, in the same forms (default: now)")
		fs.Bool("only-failed", false, "only what failed, was cancelled or was skipped while disabled")
		fs.Bool("no-wait", false, "start the replay and return without following it")
		fs.Duration("interval", 500*time.Millisecond, "how often to ask for progress")
	},
	run: replay,
}

// pointInTime reads an RFC 3339 time or a duration before now.
func pointInTime(flagName, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, usagef("--%s %q is neither an RFC 3339 time (2026-12-01T00:00:00Z) nor a duration ago (24h)", flagName, v)
}

func replay(ctx context.Context, e *env) error {
	endpointID, err := e.endpointArg(0)
	if err != nil {
		return err
	}
	since, err := pointInTime("since", e.str("since"))
	if err != nil {
		return err
	}
	if since.IsZero() {
		return usagef("--since is required: replay what was published since when (e.g. 24h, or 2026-12-01T00:00:00Z)")
	}
	until, err := pointInTime("until", e.str("until"))
	if err != nil {
		return err
	}
	interval := e.duration("interval")
	if interval <= 0 {
		return usagef("--interval must be positive, e.g. 500ms")
	}
	r, err := e.api.StartReplay(ctx, e.tenant, endpointID, client.NewReplay{Since: since, Until: until, OnlyFailed: e.boolean("only-failed")})
	if err != nil {
		return err
	}
	bar := progressBar{w: e.stderr, tty: isTerminal(e.stderr)}
	for !e.boolean("no-wait") {
		bar.draw(r)
		if finished(r) {
			break
		}
		select {
		case <-ctx.Done():
			bar.end()
			fmt.Fprintf(e.stderr, "stopped following; replay %s goes on in the background\n", r.ID)
			return nil
		case <-time.After(interval):
		}
		if r, err = e.api.GetReplay(ctx, e.tenant, endpointID, r.ID); err != nil {
			bar.end()
			return err
		}
	}
	bar.end()
	if e.json {
		return e.printJSON(r)
	}
	return e.fields("replay", r.ID.String(), "status", r.Status, "deliveries", fmt.Sprintf("%d done of %d", r.Done, r.Total))
}

// finished reports whether every delivery of the replay has been sent
// (or given up on).
func finished(r client.Replay) bool {
	return r.Status == client.ReplayCompleted && r.Done >= r.Total
}

// progressBar draws a replay's progress on a terminal in place, and
// elsewhere as a line each time the percentage changes.
type progressBar struct {
	w    io.Writer
	tty  bool
	last int
	drew bool
}

const barWidth = 30

func (b *progressBar) draw(r client.Replay) {
	pct := 100
	if r.Total > 0 {
		pct = r.Done * 100 / r.Total
	}
	if b.drew && pct == b.last && !b.tty {
		return
	}
	filled := pct * barWidth / 100
	line := fmt.Sprintf("replay [%s%s] %3d%%  %d/%d done, %d queued", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), pct, r.Done, r.Total, r.Enqueued)
	if b.tty {
		fmt.Fprint(b.w, "\r"+line)
	} else {
		fmt.Fprintln(b.w, line)
	}
	b.last, b.drew = pct, true
}

func (b *progressBar) end() {
	if b.tty && b.drew {
		fmt.Fprintln(b.w)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
