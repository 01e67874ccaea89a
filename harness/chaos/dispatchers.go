package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// stopTimeout bounds a dispatcher's graceful stop at the end of a run: its
// shutdown grace plus time to close.
const stopTimeout = 30 * time.Second

// shutdownGrace is the dispatchers' --shutdown-grace.
const shutdownGrace = 5 * time.Second

// BuildDispatcher builds cmd/dispatcher into dir with the go command on
// PATH and returns the binary's path. It runs in the module the caller is
// in, so a test and cmd/chaos both build the dispatcher of their checkout.
func BuildDispatcher(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "dispatcher")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/heraldhq/herald/cmd/dispatcher")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build cmd/dispatcher (go build needs the go command on PATH): %w\n%s", err, out)
	}
	return bin, nil
}

// The dispatchers' database timeouts, shorter than the defaults so that a
// black-holed dispatcher's recovery bound (dispatcher.RecoveryBound) is
// half a minute rather than two.
const (
	dbConnectTimeout           = 2 * time.Second
	dbPingTimeout              = time.Second
	dbIdleInTransactionTimeout = 5 * time.Second
	fanOutTimeout              = 5 * time.Second
	pollInterval               = 200 * time.Millisecond
)

// dispatcherArgs are the flags a dispatcher process of a run gets; in
// split mode (sourceURL set) it relays from sourceURL too.
func dispatcherArgs(cfg Config, databaseURL, sourceURL string) []string {
	var source []string
	if sourceURL != "" {
		source = []string{"--source-database-url", sourceName + "=" + sourceURL}
	}
	return append(source,
		"--database-url", databaseURL,
		"--db-connect-timeout", dbConnectTimeout.String(),
		"--db-ping-timeout", dbPingTimeout.String(),
		"--db-idle-in-transaction-timeout", dbIdleInTransactionTimeout.String(),
		"--fan-out-timeout", fanOutTimeout.String(),
		"--reconcile-interval", cfg.ReconcileInterval.String(),
		"--migrate=false",
		"--allow-cidrs", "127.0.0.1/32",
		"--workers", strconv.Itoa(cfg.Workers),
		"--max-conns", strconv.Itoa(cfg.MaxConns),
		"--max-inflight-per-endpoint", strconv.Itoa(cfg.Workers),
		"--poll-interval", pollInterval.String(),
		"--timeout", cfg.SenderTimeout.String(),
		// The run's endpoints keep the global timeout; the shortest bound
		// keeps the job timeout (twice the longer of the two) below
		// --rescue-stuck-after.
		"--endpoint-max-timeout", "1s",
		"--rescue-stuck-after", cfg.RescueAfter.String(),
		"--retry-base", cfg.RetryBase.String(),
		"--retry-cap", cfg.RetryCap.String(),
		"--retry-window", "24h",
		"--shutdown-grace", shutdownGrace.String(),
	)
}

// sourceName is the producer's database's name in split mode.
const sourceName = "chaos"

// fleet runs the dispatcher processes of a run, each as a subprocess with
// its output appended to a log file of its own.
type fleet struct {
	bin    string
	args   [][]string // per dispatcher
	env    []string
	logDir string

	mu         sync.Mutex
	procs      []*process
	starts     int
	kills      int
	unexpected []string
}

// startupGrace is how long after its start a dispatcher is left before
// the run's end stops it.
const startupGrace = 3 * time.Second

// process is one run of one dispatcher.
type process struct {
	index   int
	started time.Time
	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{}

	// signalled is set before the fleet kills or stops the process, so its
	// exit is not reported as unexpected.
	mu        sync.Mutex
	signalled bool
	err       error
}

func newFleet(bin string, args [][]string, env []string, logDir string) *fleet {
	return &fleet{bin: bin, args: args, env: env, logDir: logDir, procs: make([]*process, len(args))}
}

// logPath is where dispatcher i writes its logs, across its restarts.
func (f *fleet) logPath(i int) string {
	return filepath.Join(f.logDir, fmt.Sprintf("dispatcher-%d.log", i))
}

// start starts dispatcher i.
func (f *fleet) start(i int) error {
	log, err := os.OpenFile(f.logPath(i), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("dispatcher %d log: %w", i, err)
	}
	fmt.Fprintf(log, "--- chaos: starting dispatcher %d at %s\n", i, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(f.bin, f.args[i]...)
	cmd.Env = f.env
	cmd.Stdout = log
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start dispatcher %d: %w", i, err)
	}
	p := &process{index: i, started: time.Now(), cmd: cmd, log: log, done: make(chan struct{})}
	go f.wait(p)
	f.mu.Lock()
	f.procs[i] = p
	f.starts++
	f.mu.Unlock()
	return nil
}

func (f *fleet) wait(p *process) {
	err := p.cmd.Wait()
	p.log.Close()
	p.mu.Lock()
	p.err = err
	signalled := p.signalled
	p.mu.Unlock()
	if !signalled {
		f.mu.Lock()
		f.unexpected = append(f.unexpected, fmt.Sprintf("dispatcher %d (pid %d) exited by itself: %v; see %s",
			p.index, p.cmd.Process.Pid, exitText(err), f.logPath(p.index)))
		f.mu.Unlock()
	}
	close(p.done)
}

// kill sends SIGKILL to dispatcher i and returns once it is gone.
func (f *fleet) kill(i int) error {
	f.mu.Lock()
	p := f.procs[i]
	f.mu.Unlock()
	if p == nil {
		return fmt.Errorf("kill dispatcher %d: it is not running", i)
	}
	p.mu.Lock()
	p.signalled = true
	p.mu.Unlock()
	select {
	case <-p.done:
		// It exited by itself, which wait noted; it is started again.
	default:
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill dispatcher %d: %w", i, err)
		}
		<-p.done
	}
	f.mu.Lock()
	f.procs[i] = nil
	f.kills++
	f.mu.Unlock()
	return nil
}

// running returns when dispatcher i was started, if it is running.
func (f *fleet) running(i int) (started time.Time, ok bool) {
	f.mu.Lock()
	p := f.procs[i]
	f.mu.Unlock()
	if p == nil {
		return time.Time{}, false
	}
	select {
	case <-p.done:
		return time.Time{}, false
	default:
		return p.started, true
	}
}

// stop sends SIGTERM to every running dispatcher and waits for them to
// exit; each must exit 0, as a graceful stop does.
func (f *fleet) stop() error {
	f.mu.Lock()
	procs := append([]*process(nil), f.procs...)
	f.mu.Unlock()
	var errs []error
	for _, p := range procs {
		if p == nil {
			continue
		}
		// A dispatcher still starting (checking migrations) exits 1 on
		// SIGTERM; one started again late in the run is given its start.
		time.Sleep(time.Until(p.started.Add(startupGrace)))
		p.mu.Lock()
		p.signalled = true
		p.mu.Unlock()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
			errs = append(errs, fmt.Errorf("dispatcher %d did not stop within %s of SIGTERM; killed it", p.index, stopTimeout))
			continue
		}
		p.mu.Lock()
		err := p.err
		p.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("dispatcher %d: SIGTERM should stop it cleanly, but it %s; see %s", p.index, exitText(err), f.logPath(p.index)))
		}
	}
	f.mu.Lock()
	clear(f.procs)
	f.mu.Unlock()
	return errors.Join(errs...)
}

// killAll ends every dispatcher still running, for a run that fails early.
func (f *fleet) killAll() {
	f.mu.Lock()
	procs := append([]*process(nil), f.procs...)
	f.mu.Unlock()
	for _, p := range procs {
		if p == nil {
			continue
		}
		p.mu.Lock()
		p.signalled = true
		p.mu.Unlock()
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

func exitText(err error) string {
	if err == nil {
		return "exited 0"
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.String()
	}
	return err.Error()
}
