package bench

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// WriteTables writes the report as aligned Markdown tables: throughput and
// latency, cost, and the targets. They read well in a terminal and paste
// into docs/benchmarks.md as they are.
func (r Report) WriteTables(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "%s · %d CPUs · %d MB · Linux %s · %s · Postgres %s (synchronous_commit=%s, fsync=%s, shared_buffers=%s) · dispatcher %s",
		r.Date.Format("2006-01-02 15:04 MST"), m.CPUs, m.MemoryMB, m.Kernel, m.GoVersion, m.Postgres, m.SynchronousCommit, m.Fsync, m.SharedBuffers, r.Dispatcher)
	if r.ProducerServer != "" {
		fmt.Fprintf(w, " · split's producer database on %s", r.ProducerServer)
	}
	fmt.Fprint(w, "\n\n")

	speed := [][]string{{"scenario", "events", "deliveries", "publish/s", "delivered/s", "drain s", "p50 ms", "p95 ms", "p99 ms", "max ms", "commit p50 ms", "commit p99 ms", "attempts/delivery"}}
	for _, res := range r.Results {
		speed = append(speed, []string{
			res.Scenario, count(res.Events), fmt.Sprintf("%s/%s", count(res.Delivered), count(res.Deliveries)),
			count(int(res.PublishPerSecond)), count(int(res.DeliveredPerSecond)), fmt.Sprintf("%.1f", res.DrainSeconds),
			latency(res, res.Latency.P50), latency(res, res.Latency.P95), latency(res, res.Latency.P99), latency(res, res.Latency.Max),
			commitLatency(res, res.CommitLatency.P50), commitLatency(res, res.CommitLatency.P99),
			fmt.Sprintf("%.2f", res.AttemptsPerDelivery),
		})
	}
	cost := [][]string{{"scenario", "dispatcher CPU s", "api CPU s", "Postgres CPU s", "CPU ms/delivery", "peak RSS MB", "rows/delivery", "WAL bytes/delivery", "stored bytes/delivery", "machine busy", "load avg"}}
	for _, res := range r.Results {
		cost = append(cost, []string{
			res.Scenario, fmt.Sprintf("%.1f", res.DispatcherCPUSeconds), apiCPU(res), fmt.Sprintf("%.1f", res.PostgresCPUSeconds),
			fmt.Sprintf("%.2f", res.CPUPerDeliveryMS), fmt.Sprintf("%.0f", res.DispatcherPeakRSSMB),
			fmt.Sprintf("%.1f", res.RowsPerDelivery), count(int(res.WALBytesPerDelivery)), count(int(res.StoredBytesPerDelivery)),
			fmt.Sprintf("%.0f%%", res.MachineBusy*100), fmt.Sprintf("%.1f", res.LoadAverage),
		})
	}
	targets := [][]string{{"target", "want", "got", "met"}}
	for _, t := range r.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		targets = append(targets, []string{t.Name, t.Want, t.Got, met})
	}

	aged := [][]string{{"database", "history", "rows loaded", "fill s", "vacuum s", "first attempts/s", "replay/s", "batch ms, first tenth", "batch ms, last tenth"}}
	for _, name := range agedPages {
		aged[0] = append(aged[0], name+" p99 ms")
	}
	for _, a := range r.Aged {
		row := []string{a.Age, count(a.History), count(int(a.Rows)), fmt.Sprintf("%.1f", a.FillSeconds), fmt.Sprintf("%.1f", a.VacuumSeconds),
			count(int(a.FirstPerSecond)), count(int(a.ReplayPerSecond)), fmt.Sprintf("%.1f", a.BatchFirstMS), fmt.Sprintf("%.1f", a.BatchLastMS)}
		for _, name := range agedPages {
			row = append(row, fmt.Sprintf("%.1f", a.Pages[name]))
		}
		aged = append(aged, row)
	}

	for _, table := range [][][]string{speed, cost, aged, targets} {
		if len(table) == 1 {
			continue
		}
		writeTable(w, table)
		fmt.Fprintln(w)
	}
	for _, res := range r.Results {
		if res.Problem != "" {
			fmt.Fprintf(w, "%s: %s\n", res.Scenario, res.Problem)
		}
	}
	for _, a := range r.Aged {
		if a.Problem != "" {
			fmt.Fprintf(w, "aged, %s database: %s\n", a.Age, a.Problem)
		}
	}
}

// commitLatency formats a producer commit latency; the scenarios with a
// Load and the baseline have none.
func commitLatency(res Result, v float64) string {
	if res.CommitLatency.Count == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// apiCPU formats the api's CPU time; only the http scenarios have an api.
func apiCPU(res Result) string {
	if res.APICPUSeconds == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", res.APICPUSeconds)
}

// latency formats a latency figure; the baseline has none.
func latency(res Result, v float64) string {
	if res.Latency.Count == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", v)
}

// count formats n with thousands separators.
func count(n int) string {
	if n < 0 {
		return "-" + count(-n)
	}
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// writeTable writes rows as a Markdown table with aligned columns; the
// first row is the header, and columns but the first are right-aligned.
func writeTable(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell), 3)
		}
	}
	line := func(row []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if i == 0 {
				b.WriteString(" " + cell + pad + " |")
			} else {
				b.WriteString(" " + pad + cell + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	var sep strings.Builder
	sep.WriteString("|")
	for i, width := range widths {
		if i == 0 {
			sep.WriteString(" " + strings.Repeat("-", width) + " |")
		} else {
			sep.WriteString(" " + strings.Repeat("-", width-1) + ": |")
		}
	}
	fmt.Fprintln(w, sep.String())
	for _, row := range rows[1:] {
		line(row)
	}
}
