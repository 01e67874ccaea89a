package soak

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/internal/secretbox"
)

// stopTimeout bounds a dispatcher's graceful stop: its shutdown grace
// plus time to close.
const stopTimeout = 30 * time.Second

// dispatcherArgs are the flags of the run's dispatchers: the run's
// retention settings and retry policy, JSON logs (read back for the
// maintenance passes' outcomes) and loopback allowed.
func dispatcherArgs(cfg Config, databaseURL string) []string {
	return []string{
		"--database-url", databaseURL,
		"--migrate=false",
		"--allow-cidrs", "127.0.0.1/32",
		"--log-format", "json",
		"--max-conns", "10",
		"--poll-interval", "200ms",
		"--timeout", cfg.SenderTimeout.String(),
		"--retry-base", cfg.RetryBase.String(),
		"--retry-cap", cfg.RetryCap.String(),
		"--retry-window", cfg.RetryWindow.String(),
		"--partition-interval", cfg.Interval.String(),
		"--retention", cfg.Retention.String(),
		"--shutdown-grace", "5s",
	}
}

// dispatchers are the run's dispatcher processes, each writing its log to
// a file of its own. Neither harness/chaos's fleet, built around kills,
// nor harness/bench's processes, which keep only the last lines of their
// output, fit: the run reads the whole logs back.
type dispatchers struct {
	procs []*dispatcherProcess
}

type dispatcherProcess struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startDispatchers starts n dispatchers of bin with args, with the secret
// key and none of the caller's other HERALD_ settings, logging into logDir.
func startDispatchers(bin string, n int, args []string, secretKey, logDir string) (*dispatchers, error) {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HERALD_") })
	env = append(env, secretbox.EnvKey+"="+secretKey)
	d := &dispatchers{}
	for i := range n {
		path := filepath.Join(logDir, "dispatcher-"+strconv.Itoa(i)+".log")
		log, err := os.Create(path)
		if err != nil {
			d.kill()
			return nil, fmt.Errorf("dispatcher %d log: %w", i, err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
		// The dispatcher gets SIGTERM should the run die first.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			log.Close()
			d.kill()
			return nil, fmt.Errorf("start dispatcher %d: %w", i, err)
		}
		p := &dispatcherProcess{cmd: cmd, log: path, done: make(chan struct{})}
		go func() {
			p.err = cmd.Wait()
			log.Close()
			close(p.done)
		}()
		d.procs = append(d.procs, p)
	}
	return d, nil
}

// logs are the paths of the dispatchers' log files.
func (d *dispatchers) logs() []string {
	paths := make([]string, len(d.procs))
	for i, p := range d.procs {
		paths[i] = p.log
	}
	return paths
}

// exited reports a dispatcher that has exited, as a problem.
func (d *dispatchers) exited() error {
	for i, p := range d.procs {
		select {
		case <-p.done:
			return fmt.Errorf("dispatcher %d exited during the run (%v); see %s", i, p.err, p.log)
		default:
		}
	}
	return nil
}

// stop sends SIGTERM to every dispatcher and waits for each to exit 0.
func (d *dispatchers) stop() error {
	for _, p := range d.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	var errs []error
	for i, p := range d.procs {
		select {
		case <-p.done:
			if p.err != nil {
				errs = append(errs, fmt.Errorf("dispatcher %d: SIGTERM should stop it cleanly, but it exited with %v; see %s", i, p.err, p.log))
			}
		case <-time.After(stopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.done
			errs = append(errs, fmt.Errorf("dispatcher %d did not stop within %s of SIGTERM; killed it", i, stopTimeout))
		}
	}
	return errors.Join(errs...)
}

// kill ends every dispatcher still running, for a run that fails early.
func (d *dispatchers) kill() {
	for _, p := range d.procs {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
