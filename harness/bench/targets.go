package bench

import "fmt"

// Target is one goal of issues 9 and 21 and whether the run met it.
type Target struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

// The goals.
const (
	targetBurstRate        = 5000 // deliveries per second
	targetBurstOfBaseline  = 0.5
	targetSteadyRate       = 1000 // events per second
	targetSteadyP99        = 100  // milliseconds
	targetIsolationRatio   = 2.0
	targetPeakRSSMegabytes = 300
	// The publish targets of issue 21.
	targetHTTPOfSQL       = 0.8
	targetBatchOverSingle = 10.0
	targetHTTPDelivered   = 0.8
	targetTrickleCPURatio = 2.0
)

// isolationControl names the isolation run without hanging endpoints.
const isolationControl = "isolation-control"

// evaluate checks the targets whose scenarios ran.
func evaluate(r Report) []Target {
	var out []Target
	burst, haveBurst := r.result("burst")
	if haveBurst {
		out = append(out, Target{
			Name: "burst drain rate",
			Want: fmt.Sprintf("≥ %d deliveries/s", targetBurstRate),
			Got:  fmt.Sprintf("%.0f deliveries/s", burst.DeliveredPerSecond),
			Met:  burst.DeliveredPerSecond >= targetBurstRate && burst.Problem == "",
		})
		out = append(out, Target{
			Name: "dispatcher peak RSS, 100,000-delivery backlog",
			Want: fmt.Sprintf("< %d MB", targetPeakRSSMegabytes),
			Got:  fmt.Sprintf("%.0f MB", burst.DispatcherPeakRSSMB),
			Met:  burst.DispatcherPeakRSSMB > 0 && burst.DispatcherPeakRSSMB < targetPeakRSSMegabytes,
		})
	}
	if baseline, ok := r.result("baseline"); ok && haveBurst && baseline.DeliveredPerSecond > 0 {
		share := burst.DeliveredPerSecond / baseline.DeliveredPerSecond
		out = append(out, Target{
			Name: "burst vs bare River (baseline)",
			Want: fmt.Sprintf("≥ %.0f%% of %.0f jobs/s", targetBurstOfBaseline*100, baseline.DeliveredPerSecond),
			Got:  fmt.Sprintf("%.0f%%", share*100),
			Met:  share >= targetBurstOfBaseline && burst.Problem == "",
		})
	}
	if steady, ok := r.result("steady"); ok {
		out = append(out, Target{
			Name: "steady p99 commit-to-arrival",
			Want: fmt.Sprintf("< %d ms at %d events/s", targetSteadyP99, targetSteadyRate),
			Got:  fmt.Sprintf("%.1f ms at %.0f events/s", steady.Latency.P99, steady.PublishPerSecond),
			Met: steady.Latency.P99 < targetSteadyP99 && steady.Latency.Count > 0 &&
				steady.PublishPerSecond >= 0.95*targetSteadyRate && steady.Problem == "",
		})
	}
	isolation, ok1 := r.result("isolation")
	control, ok2 := r.result(isolationControl)
	if ok1 && ok2 && control.Latency.P99 > 0 {
		ratio := isolation.Latency.P99 / control.Latency.P99
		out = append(out, Target{
			Name: "isolation: healthy p99 with hanging endpoints",
			Want: fmt.Sprintf("≤ %.0f× without (%.1f ms)", targetIsolationRatio, control.Latency.P99),
			Got:  fmt.Sprintf("%.1f ms (%.2f×)", isolation.Latency.P99, ratio),
			Met:  ratio <= targetIsolationRatio && isolation.Problem == "" && control.Problem == "",
		})
	}
	return append(out, publishTargets(r)...)
}

// publishTargets checks the targets of the http scenarios.
func publishTargets(r Report) []Target {
	var out []Target
	single, haveSingle := r.result("http-burst")
	if sql, ok := r.result("sql-publish"); ok && haveSingle && sql.PublishPerSecond > 0 {
		share := single.PublishPerSecond / sql.PublishPerSecond
		out = append(out, Target{
			Name: "http-burst publish vs sql-publish",
			Want: fmt.Sprintf("≥ %.0f%% of %.0f events/s", targetHTTPOfSQL*100, sql.PublishPerSecond),
			Got:  fmt.Sprintf("%.0f events/s (%.0f%%)", single.PublishPerSecond, share*100),
			Met:  share >= targetHTTPOfSQL && single.Problem == "" && sql.Problem == "",
		})
	}
	if batch, ok := r.result("http-batch"); ok && haveSingle && single.PublishPerSecond > 0 {
		ratio := batch.PublishPerSecond / single.PublishPerSecond
		out = append(out, Target{
			Name: "http-batch publish vs http-burst",
			Want: fmt.Sprintf("≥ %.0f× %.0f events/s", targetBatchOverSingle, single.PublishPerSecond),
			Got:  fmt.Sprintf("%.0f events/s (%.1f×)", batch.PublishPerSecond, ratio),
			Met:  ratio >= targetBatchOverSingle && batch.Problem == "",
		})
	}
	if haveSingle && single.PublishPerSecond > 0 {
		share := single.DeliveredPerSecond / single.PublishPerSecond
		out = append(out, Target{
			Name: "http-burst delivered vs its publish rate",
			Want: fmt.Sprintf("≥ %.0f%% of %.0f/s", targetHTTPDelivered*100, single.PublishPerSecond),
			Got:  fmt.Sprintf("%.0f deliveries/s (%.0f%%)", single.DeliveredPerSecond, share*100),
			Met:  share >= targetHTTPDelivered && single.Problem == "",
		})
	}
	if trickle, ok := r.result("http-steady-50"); ok && haveSingle && single.CPUPerDeliveryMS > 0 {
		ratio := trickle.CPUPerDeliveryMS / single.CPUPerDeliveryMS
		out = append(out, Target{
			Name: "CPU per delivery at 50 events/s vs http-burst",
			Want: fmt.Sprintf("≤ %.0f× %.2f ms", targetTrickleCPURatio, single.CPUPerDeliveryMS),
			Got:  fmt.Sprintf("%.2f ms (%.2f×)", trickle.CPUPerDeliveryMS, ratio),
			Met:  ratio <= targetTrickleCPURatio && trickle.Problem == "",
		})
	}
	return out
}
