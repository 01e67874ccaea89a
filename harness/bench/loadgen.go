package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
)

// How a load generator publishes.
const (
	// LoadHTTP publishes through the API, PerRequest events a request
	// (the batch route when more than one).
	LoadHTTP = "http"
	// LoadSQL publishes with SELECT herald.publish(...), one event per
	// statement, each its own transaction.
	LoadSQL = "sql"
)

// LoadSpec is what a load generator process is asked to do. It is sent to
// the process as JSON on its standard input.
type LoadSpec struct {
	// Mode is LoadHTTP or LoadSQL.
	Mode string `json:"mode"`
	// APIURL and APIKey reach the API, for LoadHTTP.
	APIURL string `json:"api_url,omitempty"`
	APIKey string `json:"api_key,omitempty"`
	// DatabaseURL is the database, for LoadSQL.
	DatabaseURL string `json:"database_url,omitempty"`
	// Tenants take turns, event by event.
	Tenants []string `json:"tenants"`
	// Events is how many events to publish.
	Events int `json:"events"`
	// PerRequest is how many events one request carries.
	PerRequest int `json:"per_request"`
	// Clients is how many requests are in flight at once.
	Clients int `json:"clients"`
	// Rate is events per second; zero means as fast as the clients go.
	Rate float64 `json:"rate,omitempty"`
}

// RunLoad is the load generator: it publishes what spec asks and writes a
// line per successful request to out, "<unix nanoseconds> <message id>…",
// the time being when the answer arrived. After the last request it writes
// "done <requests> <failures>" and returns once stdin closes, so that its
// database connections, whose backends' CPU time the bench reads, live as
// long as the bench needs them.
func RunLoad(ctx context.Context, spec LoadSpec, out io.Writer, stdin io.Reader) error {
	if spec.PerRequest < 1 || spec.Clients < 1 || spec.Events < 1 || len(spec.Tenants) == 0 {
		return fmt.Errorf("load: per_request, clients, events and tenants must be set: %+v", spec)
	}
	var publish func(ctx context.Context, first int64, n int) ([]uuid.UUID, error)
	switch spec.Mode {
	case LoadHTTP:
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: spec.Clients, MaxConnsPerHost: spec.Clients}}
		publish = func(ctx context.Context, first int64, n int) ([]uuid.UUID, error) {
			return httpPublish(ctx, client, spec, first, n)
		}
	case LoadSQL:
		pool, err := database.Open(ctx, spec.DatabaseURL, database.Options{MaxConns: int32(spec.Clients)})
		if err != nil {
			return err
		}
		defer pool.Close()
		publish = func(ctx context.Context, first int64, n int) ([]uuid.UUID, error) {
			return sqlPublish(ctx, pool, spec, first)
		}
	default:
		return fmt.Errorf("load: mode %q; use %s or %s", spec.Mode, LoadHTTP, LoadSQL)
	}

	w := bufio.NewWriter(out)
	var (
		mu               sync.Mutex
		next             atomic.Int64
		requests, failed atomic.Int64
		wg               sync.WaitGroup
		firstErr         error
	)
	start := time.Now()
	for range spec.Clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				first := next.Add(int64(spec.PerRequest)) - int64(spec.PerRequest)
				if first >= int64(spec.Events) {
					return
				}
				n := int(min(int64(spec.PerRequest), int64(spec.Events)-first))
				if spec.Rate > 0 {
					slot := start.Add(time.Duration(float64(first) / spec.Rate * float64(time.Second)))
					if wait := time.Until(slot); wait > 0 {
						time.Sleep(wait)
					}
				}
				ids, err := publish(ctx, first, n)
				at := time.Now()
				requests.Add(1)
				mu.Lock()
				if err != nil {
					failed.Add(1)
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				fmt.Fprint(w, at.UnixNano())
				for _, id := range ids {
					w.WriteByte(' ')
					w.WriteString(id.String())
				}
				w.WriteByte('\n')
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// The failure first: the bench reads it once it has the summary.
	if firstErr != nil {
		fmt.Fprintln(os.Stderr, "load: first failure:", firstErr)
	}
	fmt.Fprintf(w, "done %d %d\n", requests.Load(), failed.Load())
	if err := w.Flush(); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, stdin)
	return nil
}

// loadEvent is the i-th event as the API's publish takes it: the same
// event producers.event makes.
func loadEvent(spec LoadSpec, i int64) map[string]any {
	m := (&producers{tenants: spec.Tenants}).event(i)
	return map[string]any{"event_type": m.Type, "object_id": m.ObjectID, "data": m.Data}
}

func httpPublish(ctx context.Context, client *http.Client, spec LoadSpec, first int64, n int) ([]uuid.UUID, error) {
	tenant := spec.Tenants[first%int64(len(spec.Tenants))]
	var body any
	path := "/v1/tenants/" + tenant + "/messages"
	if spec.PerRequest == 1 {
		body = loadEvent(spec, first)
	} else {
		events := make([]map[string]any, n)
		for i := range events {
			events[i] = loadEvent(spec, first+int64(i))
		}
		body = map[string]any{"events": events}
		path += "/batch"
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, spec.APIURL+path, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+spec.APIKey)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, answer)
	}
	var one struct {
		ID   uuid.UUID `json:"id"`
		Data []struct {
			ID uuid.UUID `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(answer, &one); err != nil {
		return nil, err
	}
	if spec.PerRequest == 1 {
		return []uuid.UUID{one.ID}, nil
	}
	ids := make([]uuid.UUID, len(one.Data))
	for i, d := range one.Data {
		ids[i] = d.ID
	}
	return ids, nil
}

func sqlPublish(ctx context.Context, pool *pgxpool.Pool, spec LoadSpec, i int64) ([]uuid.UUID, error) {
	e := loadEvent(spec, i)
	data, err := json.Marshal(e["data"])
	if err != nil {
		return nil, err
	}
	var id uuid.UUID
	var version int64
	err = pool.QueryRow(ctx, "SELECT * FROM herald.publish($1, $2, $3, $4)",
		spec.Tenants[i%int64(len(spec.Tenants))], eventType, e["object_id"], string(data)).Scan(&id, &version)
	return []uuid.UUID{id}, err
}

// LoadProcess is how the bench starts a load generator: the program at
// Path with Args, which calls RunLoad with the spec it reads on stdin.
type LoadProcess struct {
	Path string
	Args []string
}

// load is a running load generator.
type load struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	done    chan struct{}
	summary string
	err     error
	output  tail
}

// start starts the load generator and feeds what it reports to rec.
func (lp LoadProcess) start(spec LoadSpec, rec *recorder) (*load, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(lp.Path, lp.Args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	l := &load{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	cmd.Stderr = &l.output
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start load generator %s: %w", lp.Path, err)
	}
	if _, err := stdin.Write(append(raw, '\n')); err != nil {
		return nil, err
	}
	go func() {
		defer close(l.done)
		l.err = readLoad(stdout, rec, &l.summary)
	}()
	return l, nil
}

// readLoad reads the generator's lines into rec until its summary line.
func readLoad(r io.Reader, rec *recorder, summary *string) error {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "done ") {
			*summary = line
			return nil
		}
		fields := strings.Fields(line)
		nanos, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return fmt.Errorf("load generator wrote %q", line)
		}
		ids := make([]uuid.UUID, 0, len(fields)-1)
		for _, f := range fields[1:] {
			id, err := uuid.Parse(f)
			if err != nil {
				return fmt.Errorf("load generator wrote %q", line)
			}
			ids = append(ids, id)
		}
		rec.committed(ids, time.Unix(0, nanos))
	}
	if err := s.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the load generator ended without its summary")
}

// wait waits until the generator has reported its last request and
// returns how many requests failed.
func (l *load) wait(ctx context.Context) (failed int, err error) {
	select {
	case <-l.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if l.err != nil {
		return 0, fmt.Errorf("%w; its output:\n%s", l.err, l.output.String())
	}
	var requests int
	if _, err := fmt.Sscanf(l.summary, "done %d %d", &requests, &failed); err != nil {
		return 0, fmt.Errorf("load generator summary %q", l.summary)
	}
	return failed, nil
}

// stop lets the generator exit, closing its connections, and returns its
// CPU time.
func (l *load) stop() time.Duration {
	_ = l.stdin.Close()
	_ = l.cmd.Wait()
	if l.cmd.ProcessState == nil {
		return 0
	}
	return exitedUsage(l.cmd.ProcessState).CPU
}

// firstFailure is the failure the generator logged, if any.
func (l *load) firstFailure() string {
	return strings.TrimSpace(l.output.String())
}
