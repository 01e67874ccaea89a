package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/receiver"
)

// ConsumerWorkerEnv is the environment variable that makes a program the
// consumer's worker process: Run starts Setup.Self with it set, and the
// program's main (cmd/chaos's, or a test's TestMain) must then call
// [RunConsumerWorker] with its value and exit.
const ConsumerWorkerEnv = "CHAOS_CONSUMER_WORKER"

// PoisonExitCode is how the consumer's worker process exits when it
// applies the poison event.
const PoisonExitCode = 3

// consumerWorkers is how many receiver Workers the worker process runs.
const consumerWorkers = 2

// workerSpec is what the worker process is told, as JSON in
// ConsumerWorkerEnv.
type workerSpec struct {
	DatabaseURL string        `json:"database_url"`
	Poison      int           `json:"poison"`
	Lease       time.Duration `json:"lease"`
	MaxAttempts int           `json:"max_attempts"`
}

// RunConsumerWorker is the consumer's worker process: receiver Workers
// applying the inbox to the ledger and the objects until SIGTERM or
// SIGINT. Applying the poison event exits the process at once with
// PoisonExitCode, as a handler that crashes its process does. spec is the
// value of ConsumerWorkerEnv.
func RunConsumerWorker(spec string) error {
	var s workerSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return fmt.Errorf("chaos consumer worker: %s is not what chaos.Run sets: %w", ConsumerWorkerEnv, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	pool, err := pgxpool.New(ctx, s.DatabaseURL)
	if err != nil {
		return fmt.Errorf("chaos consumer worker: %w", err)
	}
	defer pool.Close()
	crash := func() {
		logger.Error("chaos consumer worker: applying the poison event; exiting", "exit_code", PoisonExitCode)
		os.Exit(PoisonExitCode)
	}
	var wg sync.WaitGroup
	errs := make([]error, consumerWorkers)
	for i := range consumerWorkers {
		w, err := receiver.NewWorker(pool, apply(s.Poison, crash), receiver.WorkerConfig{
			BatchSize:    50,
			PollInterval: 100 * time.Millisecond,
			RetryDelay:   func(int) time.Duration { return 200 * time.Millisecond },
			// Short, so that the events claimed with the poison one, and
			// a batch whose hand-back failed during the Postgres restart,
			// wait little.
			LeaseDuration: s.Lease,
			MaxAttempts:   s.MaxAttempts,
			PruneInterval: -1,
			Logger:        logger,
		})
		if err != nil {
			return err
		}
		wg.Go(func() { errs[i] = w.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// restartDelay is how long the worker process stays down after it died,
// as a supervisor's restart back-off would.
const restartDelay = 200 * time.Millisecond

// workerProcess runs the consumer's worker process and starts it again
// whenever it dies, as a supervisor (systemd, Kubernetes) does.
type workerProcess struct {
	self    string
	env     []string
	logPath string
	logger  *slog.Logger

	mu         sync.Mutex
	cmd        *exec.Cmd
	stopping   bool
	crashes    int // exits with PoisonExitCode
	unexpected []string
	done       chan struct{} // closed when the supervision ends
}

func newWorkerProcess(self string, cfg Config, consumerURL, logDir string, logger *slog.Logger) (*workerProcess, error) {
	spec, err := json.Marshal(workerSpec{DatabaseURL: consumerURL, Poison: cfg.Poison, Lease: cfg.ConsumerLease, MaxAttempts: cfg.ConsumerMaxAttempts})
	if err != nil {
		return nil, err
	}
	return &workerProcess{
		self:    self,
		env:     append(withoutHeraldEnv(os.Environ()), ConsumerWorkerEnv+"="+string(spec)),
		logPath: filepath.Join(logDir, "consumer-worker.log"),
		logger:  logger,
		done:    make(chan struct{}),
	}, nil
}

// start starts the process and supervises it until stop.
func (p *workerProcess) start() error {
	cmd, err := p.spawn()
	if err != nil {
		return err
	}
	if cmd == nil {
		return errors.New("the consumer's worker process was stopped before it started")
	}
	go p.supervise(cmd)
	return nil
}

func (p *workerProcess) spawn() (*exec.Cmd, error) {
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("consumer worker log: %w", err)
	}
	defer log.Close()
	fmt.Fprintf(log, "--- chaos: starting the consumer's worker process at %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.self)
	cmd.Env = p.env
	cmd.Stdout = log
	cmd.Stderr = log
	// Started under the lock, so that stop either sees it or prevents it.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return nil, nil
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the consumer's worker process (%s): %w", p.self, err)
	}
	p.cmd = cmd
	return cmd, nil
}

func (p *workerProcess) supervise(cmd *exec.Cmd) {
	defer close(p.done)
	for {
		err := cmd.Wait()
		p.mu.Lock()
		stopping := p.stopping
		var exit *exec.ExitError
		switch {
		case stopping:
			if err != nil {
				p.unexpected = append(p.unexpected, fmt.Sprintf("the consumer's worker process should stop cleanly on SIGTERM, but it %s; see %s", exitText(err), p.logPath))
			}
		case errors.As(err, &exit) && exit.ExitCode() == PoisonExitCode:
			p.crashes++
		default:
			p.unexpected = append(p.unexpected, fmt.Sprintf("the consumer's worker process %s, not on the poison event; see %s", exitText(err), p.logPath))
		}
		p.mu.Unlock()
		if stopping {
			return
		}
		p.logger.Info("chaos: the consumer's worker process died; starting it again", "exit", exitText(err))
		time.Sleep(restartDelay)
		next, err := p.spawn()
		if err != nil {
			p.mu.Lock()
			p.unexpected = append(p.unexpected, err.Error())
			p.mu.Unlock()
			return
		}
		if next == nil {
			return // stopped meanwhile
		}
		cmd = next
	}
}

// stop sends SIGTERM and waits for the process to exit; kill sends
// SIGKILL instead, for a run that fails early.
func (p *workerProcess) stop() { p.end(syscall.SIGTERM) }
func (p *workerProcess) kill() { p.end(syscall.SIGKILL) }

func (p *workerProcess) end(sig syscall.Signal) {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		<-p.done
		return
	}
	p.stopping = true
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-p.done
	}
}

// result returns how often the process died on the poison event and what
// else went wrong with it.
func (p *workerProcess) result() (crashes int, unexpected []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.crashes, append([]string(nil), p.unexpected...)
}
