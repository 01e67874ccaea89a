package bench

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// kernel is the running kernel's release, e.g. "6.1.0-18-amd64".
func kernel() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(data))
}

// memoryMB is the machine's memory from /proc/meminfo.
func memoryMB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		value, ok := strings.CutPrefix(s.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		return kb >> 10
	}
	return 0
}
