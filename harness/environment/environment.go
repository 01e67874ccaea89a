// Package environment describes where a harness ran, for the header of the
// output that cmd/chaos and cmd/sim print and check in under docs/.
package environment

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Lines returns the header lines "go: …", "postgres: …" (postgres is the
// server's version), "machine: …" (processor, CPUs, OS and architecture)
// and "run date: …" (today, UTC).
func Lines(postgres string) []string {
	machine := fmt.Sprintf("%d CPUs, %s/%s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	if model := cpuModel(); model != "" {
		machine = model + ", " + machine
	}
	return []string{
		"go: " + runtime.Version(),
		"postgres: " + postgres,
		"machine: " + machine,
		"run date: " + time.Now().UTC().Format(time.DateOnly),
	}
}

// cpuModel reads the processor's name on Linux; elsewhere it is empty.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, value, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}
