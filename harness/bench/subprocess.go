package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopTimeout is how long a child process gets to exit after SIGTERM
// before it is killed.
const stopTimeout = 45 * time.Second

// ProcessDispatcher returns a StartDispatcher that runs the dispatcher
// program at path as a child process with args. The database URL, the
// secret key and the loopback allow-list reach it through the environment
// (HERALD_DATABASE_URL, HERALD_SECRET_KEY, HERALD_ALLOW_CIDRS), with
// migrations off: the bench database is migrated already. A source adds
// --source-database-url SourceName=source.
//
// It returns once the dispatcher says it takes jobs (/readyz on its
// metrics listener, HERALD_METRICS_ADDR on a free loopback port): a run's
// clock starts there, not while the process starts and warms its
// connections.
func ProcessDispatcher(path string, args ...string) StartDispatcher {
	return func(ctx context.Context, url, secretKey, source string) (RunningDispatcher, error) {
		args := args
		if source != "" {
			args = append(slices.Clip(args), "--source-database-url", SourceName+"="+source)
		}
		addr, err := freeLoopbackAddr()
		if err != nil {
			return nil, fmt.Errorf("a port for the dispatcher's metrics: %w", err)
		}
		p, err := startProcess("dispatcher", path, args,
			"HERALD_DATABASE_URL="+url,
			"HERALD_SECRET_KEY="+secretKey,
			"HERALD_ALLOW_CIDRS="+LoopbackCIDR,
			"HERALD_MIGRATE=false",
			"HERALD_METRICS_ADDR="+addr,
		)
		if err != nil {
			return nil, err
		}
		if err := p.waitReady(ctx, "http://"+addr+"/readyz"); err != nil {
			_, _ = p.Stop(context.WithoutCancel(ctx))
			return nil, err
		}
		return p, nil
	}
}

// readyTimeout bounds the wait for a started dispatcher to take jobs.
const readyTimeout = 2 * time.Minute

// freeLoopbackAddr returns a loopback address with a port nothing listens
// on now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady polls url until it answers 200, the process exits, or
// readyTimeout passes.
func (p *process) waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("%s did not say it was ready at %s within %s: %w. Its last output:\n%s", p.name, url, readyTimeout, ctx.Err(), p.output.String())
		case <-tick.C:
		}
	}
}

// startProcess starts the program at path as a child process with args
// and env added to this process's environment.
func startProcess(name, path string, args []string, env ...string) (*process, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	// The child gets SIGTERM should the bench die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	p := &process{name: name, cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout = &p.output
	cmd.Stderr = &p.output
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", name, path, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// process is a program (the dispatcher, the api) running as a child
// process.
type process struct {
	name    string
	cmd     *exec.Cmd
	output  tail
	exited  chan struct{}
	waitErr error
}

func (p *process) Usage() (Usage, error) {
	select {
	case <-p.exited:
		return Usage{}, p.exitError()
	default:
	}
	return processUsage(p.cmd.Process.Pid)
}

// Stop sends SIGTERM and waits for the process to exit; the kernel's
// accounting of the child then gives its CPU time and peak RSS.
func (p *process) Stop(ctx context.Context) (Usage, error) {
	select {
	case <-p.exited:
		return Usage{}, p.exitError()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
		return Usage{}, fmt.Errorf("%s did not exit within %s of SIGTERM; killed it. Its last output:\n%s", p.name, stopTimeout, p.output.String())
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.exited
		return Usage{}, ctx.Err()
	}
	if p.waitErr != nil {
		return Usage{}, fmt.Errorf("%s exited with %v. Its last output:\n%s", p.name, p.waitErr, p.output.String())
	}
	return exitedUsage(p.cmd.ProcessState), nil
}

func (p *process) exitError() error {
	status := p.waitErr
	if status == nil {
		status = errors.New("exit status 0")
	}
	return fmt.Errorf("%s exited during the run (%v). Its last output:\n%s", p.name, status, p.output.String())
}

// tail keeps the last lines a process wrote, for error messages.
type tail struct {
	mu    sync.Mutex
	lines []string
	part  string
}

const tailLines = 20

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := t.part + string(b)
	lines := strings.Split(text, "\n")
	t.part = lines[len(lines)-1]
	t.lines = append(t.lines, lines[:len(lines)-1]...)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(append(append([]string(nil), t.lines...), t.part), "\n")
}
