package replicas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/harness/chaos"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/signing"
)

// bin holds the api and the dispatcher, built once.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-replicas-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "../../cmd/api", "../../cmd/dispatcher")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build the api and the dispatcher: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// Postgres's defaults: max_connections, and the slots of those it keeps
// for superusers.
const (
	maxConnections         = 100
	superuserReservedSlots = 3
)

// The defaults' own arithmetic: at most, a dispatcher opens its pool,
// River's listener (taken out of the pool, so outside its count) and, on
// the one fan-out leader, the lock connection; an api its pool, the key
// cache's listener and the connection /metrics reads through. Four
// dispatchers and an api must fit in what a role that is not a superuser
// may open.
func TestDefaultsOfFourDispatchersAndAnAPIFitTheDefaultLimit(t *testing.T) {
	t.Parallel()
	const dispatchers = 4
	most := dispatchers*(dispatcher.DefaultMaxConns+1) + 1 + api.DefaultMaxConns + 2
	require.LessOrEqual(t, most, maxConnections-superuserReservedSlots,
		"four dispatchers and an api may open %d connections with their defaults", most)
}

// process is a running program; its log is kept in a file and shown when the
// test fails.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
}

func start(t *testing.T, program, name string, env []string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(filepath.Join(bin, program)), log: filepath.Join(t.TempDir(), name+".log")}
	p.cmd.Env = append(os.Environ(), env...)
	logs, err := os.Create(p.log)
	require.NoError(t, err)
	p.cmd.Stdout, p.cmd.Stderr = logs, logs
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		_ = p.cmd.Wait()
		_ = logs.Close()
		if t.Failed() {
			raw, _ := os.ReadFile(p.log)
			t.Logf("%s's log:\n%s", name, raw)
		}
	})
	return p
}

// output is what the process has logged so far.
func (p *process) output(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(p.log)
	require.NoError(t, err)
	return string(raw)
}

// peaks samples pg_stat_activity every 50 ms and keeps, for each
// application_name, the most connections seen at once, and the most in
// all.
type peaks struct {
	mu      sync.Mutex
	byName  map[string]int
	total   int
	leaders int // most fan-out leaders seen at once
	err     error
}

const samplerName = "herald-replicas-test"

func (p *peaks) sample(ctx context.Context, conn *pgx.Conn) {
	for ctx.Err() == nil {
		rows, err := conn.Query(ctx, `SELECT coalesce(application_name, ''), count(*)::int FROM pg_stat_activity
WHERE backend_type = 'client backend' AND application_name <> $1 GROUP BY 1`, samplerName)
		if err != nil {
			p.fail(ctx, err)
			return
		}
		now := map[string]int{}
		var name string
		var n int
		_, err = pgx.ForEachRow(rows, []any{&name, &n}, func() error {
			now[name] = n
			return nil
		})
		if err != nil {
			p.fail(ctx, err)
			return
		}
		p.mu.Lock()
		total, leaders := 0, 0
		for name, n := range now {
			total += n
			p.byName[name] = max(p.byName[name], n)
			if strings.HasSuffix(name, dispatcher.FanOutLeaderSuffix) {
				leaders += n
			}
		}
		p.total = max(p.total, total)
		p.leaders = max(p.leaders, leaders)
		p.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
}

// fail records a sampling error, unless sampling was stopped.
func (p *peaks) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

const bootstrapKey = "hk_dev_0123456789abcdef0123456789abcdef0123456789abcdef"

// Four dispatchers and an api, with their default settings but for what a
// test must give (the database, the secret key, the loopback receivers, no
// publish rate limit for its one tenant),
// start together on a fresh server with max_connections = 100, create and
// migrate its database, take 2,000 publishes through the api from 32
// clients at once and deliver them to three endpoints: every delivery
// arrives once, no program is refused a connection ("too many clients"),
// and pg_stat_activity shows how many connections each program held.
func TestFourDispatchersAndAnAPIOnOneHundredConnections(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("/usr/lib/postgresql/*/bin")
	require.NoError(t, err)
	require.Len(t, dirs, 1, "want the server binaries of one Postgres version under /usr/lib/postgresql (apt-get install postgresql)")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srv, err := chaos.StartPrivateServer(ctx, chaos.PrivateServerConfig{BinDir: dirs[0], MaxConnections: maxConnections})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })

	admin, err := pgx.Connect(ctx, srv.URL()+"&application_name="+samplerName)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	var limit int
	require.NoError(t, admin.QueryRow(ctx, "SELECT current_setting('max_connections')::int").Scan(&limit))
	require.Equal(t, maxConnections, limit)
	seen := &peaks{byName: map[string]int{}}
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		seen.sample(sampling, admin)
	}()

	env := []string{
		"HERALD_DATABASE_URL=" + strings.Replace(srv.URL(), "/postgres?", "/herald?", 1),
		"HERALD_SECRET_KEY=" + secretbox.Generate(),
		"HERALD_ALLOW_CIDRS=127.0.0.0/8",
	}
	addr := freeAddr(t)
	programs := []*process{start(t, "api", "api", append(env, "HERALD_API_ADDR="+addr, "HERALD_BOOTSTRAP_API_KEY="+bootstrapKey, "HERALD_PUBLIC_URL=http://"+addr,
		// One tenant's publishes at the rate of many.
		"HERALD_PUBLISH_RATE=-1", "HERALD_KEY_RATE_SHARE=-1"))}
	for i := range 4 {
		programs = append(programs, start(t, "dispatcher", fmt.Sprintf("dispatcher-%d", i), env))
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 50*time.Millisecond, "the api answers /readyz")

	c, err := client.New(client.Config{URL: "http://" + addr, Key: bootstrapKey})
	require.NoError(t, err)
	_, err = c.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	receivers := make([]*webhooktest.Receiver, 3)
	for i := range receivers {
		receivers[i] = webhooktest.NewReceiver(t, webhooktest.Status(200))
		_, err := c.CreateEndpoint(ctx, "acme", client.NewEndpoint{URL: receivers[i].URL})
		require.NoError(t, err)
	}

	const messages, clients = 2000, 32
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			for i := w; i < messages; i += clients {
				_, err := c.Publish(ctx, "acme", client.NewMessage{EventType: "invoice.paid", ObjectID: fmt.Sprintf("inv_%d", i), Data: json.RawMessage(`{"amount":4200}`)})
				if err != nil {
					t.Errorf("publish %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	for i, r := range receivers {
		require.Eventually(t, func() bool { return r.Count() >= messages }, 2*time.Minute, 50*time.Millisecond,
			"receiver %d got %d of %d", i, r.Count(), messages)
	}
	stopSampling()
	<-sampled

	for i, r := range receivers {
		ids := map[string]int{}
		for _, req := range r.Requests() {
			ids[req.Header.Get(signing.HeaderID)]++
		}
		require.Len(t, ids, messages, "receiver %d", i)
		for id, n := range ids {
			require.Equal(t, 1, n, "receiver %d got %s %d times", i, id, n)
		}
	}
	for _, p := range programs {
		require.NotContains(t, p.output(t), "too many clients", "%s was refused a connection", p.name)
	}
	require.NoError(t, seen.err, "sampling pg_stat_activity")
	t.Logf("most connections at once: %d in all (the sampler's aside); by application_name: %v", seen.total, seen.byName)
	require.Equal(t, 1, seen.leaders, "one fan-out leader at a time")
	require.LessOrEqual(t, seen.total, maxConnections-superuserReservedSlots)
	require.LessOrEqual(t, seen.byName["herald-dispatcher"], 4*(dispatcher.DefaultMaxConns+1))
	require.LessOrEqual(t, seen.byName["herald-api"], api.DefaultMaxConns+1)
	require.LessOrEqual(t, seen.byName["herald-api"+metrics.ConnectionSuffix], 1)
}
