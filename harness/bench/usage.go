package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Usage is the CPU time and memory of a process.
type Usage struct {
	// CPU is user plus system time.
	CPU time.Duration
	// RSS is the resident set size now, and PeakRSS its high-water mark.
	RSS     int64
	PeakRSS int64
}

// clockTick is the unit of CPU times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// selfUsage is this process's usage. The peak is the one since the last
// resetPeakRSS.
func selfUsage() (Usage, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Usage{}, fmt.Errorf("getrusage: %w", err)
	}
	u := Usage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	var err error
	u.RSS, u.PeakRSS, err = procMemory("self")
	return u, err
}

// resetPeakRSS starts a new high-water mark of this process's RSS, so each
// scenario's peak is its own (Linux: clear_refs "5").
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// processUsage reads the usage of a running process from /proc.
func processUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start after its closing parenthesis. utime and stime are fields 14
	// and 15.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	fields := strings.Fields(string(rest))
	if len(fields) < 13 {
		return Usage{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return Usage{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	u := Usage{CPU: time.Duration(utime+stime) * clockTick}
	u.RSS, u.PeakRSS, err = procMemory(strconv.Itoa(pid))
	return u, err
}

// exitedUsage is the usage the kernel reported for a child that exited.
func exitedUsage(state *os.ProcessState) Usage {
	ru, ok := state.SysUsage().(*syscall.Rusage)
	if !ok {
		return Usage{CPU: state.UserTime() + state.SystemTime()}
	}
	return Usage{
		CPU:     time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		PeakRSS: ru.Maxrss << 10, // kilobytes on Linux
	}
}

// procMemory reads VmRSS and VmHWM of /proc/<pid>/status.
func procMemory(pid string) (rss, peak int64, err error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%s/status: %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, s.Err()
}

// machineCPU is the machine's cumulative CPU time from /proc/stat, in
// ticks: all of it and the busy part.
type machineCPU struct{ total, busy int64 }

func readMachineCPU() (machineCPU, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("/proc/stat: unexpected format")
	}
	var c machineCPU
	for i, f := range fields[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("/proc/stat: %w", err)
		}
		c.total += n
		// idle and iowait are fields 4 and 5 (indexes 3 and 4 here);
		// guest time is already counted in user time.
		switch {
		case i == 3 || i == 4:
		case i >= 8:
			c.total -= n
		default:
			c.busy += n
		}
	}
	return c, nil
}

// busySince is the fraction of the machine's CPU time that was busy since
// before.
func (c machineCPU) busySince(before machineCPU) float64 {
	total := c.total - before.total
	if total <= 0 {
		return 0
	}
	return float64(c.busy-before.busy) / float64(total)
}

// loadAverage is the one-minute load average.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(data), " ")
	v, _ := strconv.ParseFloat(first, 64)
	return v
}
