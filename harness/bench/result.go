package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Result is what one scenario run measured.
type Result struct {
	Scenario string `json:"scenario"`
	About    string `json:"about"`
	// Endpoints is how many endpoints the run had, Hanging how many of
	// them held requests until the timeout.
	Endpoints int `json:"endpoints"`
	Hanging   int `json:"hanging"`
	// Events is how many events were published (jobs inserted, for the
	// baseline).
	Events int `json:"events"`
	// Deliveries is how many deliveries to measured endpoints the run
	// expected, Delivered how many arrived and were accepted, Duplicates
	// how many accepted copies arrived beyond the first.
	Deliveries int `json:"deliveries"`
	Delivered  int `json:"delivered"`
	Duplicates int `json:"duplicates"`
	// PublishPerSecond is events committed per second while publishing.
	PublishPerSecond float64 `json:"publish_per_second"`
	PublishSeconds   float64 `json:"publish_seconds"`
	// DeliveredPerSecond is the sustained rate: accepted deliveries per
	// second after the warm-up, up to the arrival of 99% of them. For the
	// baseline, jobs completed per second.
	DeliveredPerSecond float64 `json:"delivered_per_second"`
	// DrainSeconds is from the start of delivering (the dispatcher's start
	// for a burst, the first publish otherwise) to the last arrival.
	DrainSeconds float64 `json:"drain_seconds"`
	// Latency is from the producer's commit returning to the receiver's
	// handler starting, for deliveries to measured endpoints whose event
	// was committed after the warm-up.
	Latency Latency `json:"latency"`
	// CommitLatency is how long the producers' publishing transactions
	// took, from begin to the commit returning, for those committed after
	// the warm-up: what publishing costs the producer. Only in-process
	// producers record it (not the scenarios with a Load).
	CommitLatency Latency `json:"commit_latency"`
	// AttemptsPerDelivery is requests per delivery, at measured endpoints.
	AttemptsPerDelivery float64 `json:"attempts_per_delivery"`
	// DispatcherCPUSeconds and DispatcherPeakRSSMB are the dispatcher's
	// (or, in-process, the whole bench process's) CPU time and memory
	// high-water mark during the run.
	DispatcherCPUSeconds float64 `json:"dispatcher_cpu_seconds"`
	DispatcherPeakRSSMB  float64 `json:"dispatcher_peak_rss_mb"`
	// PostgresCPUSeconds is the CPU time of the Postgres backends that
	// served the run's connections (producers' and dispatcher's); the WAL
	// writer, checkpointer and other background processes are not in it.
	PostgresCPUSeconds float64 `json:"postgres_cpu_seconds"`
	// APICPUSeconds is the api process's CPU time, for the scenarios that
	// publish through it; the load generator's own is not counted.
	APICPUSeconds float64 `json:"api_cpu_seconds,omitempty"`
	// CPUPerDeliveryMS is dispatcher, api and Postgres CPU time per
	// delivery the run created, in milliseconds: what a delivery costs,
	// whatever else the machine was doing.
	CPUPerDeliveryMS float64 `json:"cpu_per_delivery_ms"`
	// Writes is what Postgres wrote; the per-delivery figures divide it by
	// every delivery the run created (hanging endpoints' included).
	Writes                 Writes  `json:"writes"`
	RowsPerDelivery        float64 `json:"rows_per_delivery"`
	WALBytesPerDelivery    float64 `json:"wal_bytes_per_delivery"`
	StoredBytesPerDelivery float64 `json:"stored_bytes_per_delivery"`
	// MachineBusy is the fraction of all CPUs' time that was busy during
	// the run; LoadAverage the one-minute load average when it started.
	MachineBusy float64 `json:"machine_busy"`
	LoadAverage float64 `json:"load_average"`
	// Series is the run second by second.
	Series []Point `json:"series"`
	// Problem, when set, says why the run's numbers are incomplete.
	Problem string `json:"problem,omitempty"`
}

// Report is a whole bench run.
type Report struct {
	Date       time.Time `json:"date"`
	Machine    Machine   `json:"machine"`
	Dispatcher string    `json:"dispatcher"`
	// ProducerServer is the server the split scenarios' producer database
	// was on, host:port, when it was not the scratch database's.
	ProducerServer string   `json:"producer_server,omitempty"`
	Results        []Result `json:"results"`
	// Aged is the aged scenario's comparison, fresh then aged.
	Aged    []Age    `json:"aged,omitempty"`
	Targets []Target `json:"targets"`
}

// Machine describes where the bench ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	MemoryMB  int64  `json:"memory_mb"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
	Postgres  string `json:"postgres"`
	// SynchronousCommit and Fsync show whether commits were durable.
	SynchronousCommit string `json:"synchronous_commit"`
	Fsync             string `json:"fsync"`
	SharedBuffers     string `json:"shared_buffers"`
}

// result returns the result of the named scenario.
func (r Report) result(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Scenario == name {
			return res, true
		}
	}
	return Result{}, false
}

// WriteJSON writes the report to path, indented.
func (r Report) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
