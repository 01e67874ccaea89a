package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/harness/bench"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/scratchdb"
)

// TestCommandSmoke runs the command as `make bench` does, with the
// dispatcher as a child process, on three scenarios shrunk to a few
// hundred deliveries: split among them, relaying from a producer database
// the bench made.
func TestCommandSmoke(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dispatcher := filepath.Join(dir, "dispatcher")
	build := exec.Command("go", "build", "-o", dispatcher, "github.com/heraldhq/herald/cmd/dispatcher")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the dispatcher: %s", out)

	jsonPath, svgPath := filepath.Join(dir, "results.json"), filepath.Join(dir, "latency.svg")
	// A scratch database of the test's own; the bench drops it when done.
	err = run([]string{
		"--database-url", pgtest.Server(t).URL(scratchdb.UniqueName("herald_bench_smoke_")),
		"--scenarios", "steady,split,burst",
		"--smoke", "300",
		"--producers", "4",
		"--max-conns", "4",
		"--dispatcher-bin", dispatcher,
		"--progress", "0",
		"--json", jsonPath,
		"--svg", svgPath,
	})
	require.NoError(t, err)

	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var report bench.Report
	require.NoError(t, json.Unmarshal(data, &report))
	require.Equal(t, "process", report.Dispatcher)
	require.Len(t, report.Results, 3)
	for _, res := range report.Results {
		require.Empty(t, res.Problem, res.Scenario)
		require.Equal(t, res.Deliveries, res.Delivered, res.Scenario)
		require.Positive(t, res.DispatcherCPUSeconds, "%s: the child's CPU time was read", res.Scenario)
		require.Positive(t, res.DispatcherPeakRSSMB, "%s: the child's peak RSS was read", res.Scenario)
	}
	var judged []string
	for _, target := range report.Targets {
		judged = append(judged, target.Name)
	}
	require.Contains(t, judged, "split producer commit p99 vs steady")
	svg, err := os.ReadFile(svgPath)
	require.NoError(t, err)
	require.Contains(t, string(svg), "steady")
}

func TestCommandRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenarios", "nope"}, `unknown scenario "nope"`},
		{[]string{"--database-url", "postgres://postgres@127.0.0.1:5432/herald"}, `drops and recreates database "herald"`},
		{[]string{"--dispatcher", "thread"}, `--dispatcher is "thread"; use process or in-process`},
		{[]string{"--dispatcher-bin", "/nonexistent/dispatcher", "steady"}, `unexpected argument "steady"`},
	} {
		require.ErrorContains(t, run(tt.args), tt.want, "args %q", tt.args)
	}
}
