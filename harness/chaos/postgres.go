package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PrivateServer is a Postgres server of the run's own: a cluster created
// with initdb in a temporary directory and started with pg_ctl on a free
// loopback port, so that restarting it disturbs nobody else. [Outage]s
// restart it for real ([RestartServer]); Stop removes it.
type PrivateServer struct {
	bin   string
	dir   string // data directory, socket directory and log, all in one
	port  int
	runAs *user.User // nil: run the binaries as this process's user
	// maxConns is the server's max_connections.
	maxConns int
}

// PrivateServerConfig says where the Postgres binaries are.
type PrivateServerConfig struct {
	// BinDir holds initdb and pg_ctl, such as /usr/lib/postgresql/15/bin.
	// Required.
	BinDir string
	// RunAs is the operating-system user the server runs as when this
	// process is root, which Postgres refuses to run as. Defaults to
	// "postgres". Ignored when this process is not root.
	RunAs string
	// MaxConnections is the server's max_connections. Defaults to
	// DefaultPrivateMaxConnections, room for a chaos run's connections.
	// Zero means the default.
	MaxConnections int
}

// DefaultPrivateMaxConnections is PrivateServerConfig.MaxConnections's
// default.
const DefaultPrivateMaxConnections = 200

// privateServerSettings are the server's settings besides max_connections:
// loopback only, its socket in its own directory, and no
// fsync, since the run tests what its clients see of a restart, not the
// durability of a crash (the restart is a clean one, pg_ctl's fast mode).
var privateServerSettings = []string{
	"listen_addresses=127.0.0.1",
	"fsync=off",
	"synchronous_commit=off",
	"full_page_writes=off",
}

// StartPrivateServer creates a cluster in a new temporary directory and
// starts it. The caller must Stop it.
func StartPrivateServer(ctx context.Context, cfg PrivateServerConfig) (_ *PrivateServer, err error) {
	if cfg.BinDir == "" {
		return nil, errors.New("private Postgres: BinDir is required (the directory of initdb and pg_ctl, e.g. /usr/lib/postgresql/15/bin)")
	}
	for _, tool := range []string{"initdb", "pg_ctl"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, tool)); err != nil {
			return nil, fmt.Errorf("private Postgres: %w; install Postgres's server binaries or point at their directory", err)
		}
	}
	if cfg.MaxConnections < 0 {
		return nil, fmt.Errorf("private Postgres: MaxConnections must not be negative, got %d; zero means %d", cfg.MaxConnections, DefaultPrivateMaxConnections)
	}
	s := &PrivateServer{bin: cfg.BinDir, maxConns: cmp.Or(cfg.MaxConnections, DefaultPrivateMaxConnections)}
	if os.Geteuid() == 0 {
		name := cfg.RunAs
		if name == "" {
			name = "postgres"
		}
		if s.runAs, err = user.Lookup(name); err != nil {
			return nil, fmt.Errorf("private Postgres: Postgres does not run as root, and the user to run it as: %w", err)
		}
	}
	if s.dir, err = os.MkdirTemp("", "chaos-postgres-"); err != nil {
		return nil, fmt.Errorf("private Postgres: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(s.dir)
		}
	}()
	if err := s.chown(s.dir); err != nil {
		return nil, err
	}
	if s.port, err = freePort(); err != nil {
		return nil, fmt.Errorf("private Postgres: find a free port: %w", err)
	}
	if err := s.run(ctx, "initdb", "-D", s.dataDir(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--no-locale"); err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// URL is the server's "postgres" database, as the superuser postgres.
func (s *PrivateServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Addr is the server's host:port.
func (s *PrivateServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Restart restarts the server with pg_ctl restart in fast mode: every
// session is ended, the server shuts down cleanly and starts again; it
// returns once the server accepts connections.
func (s *PrivateServer) Restart(ctx context.Context) error {
	return s.run(ctx, "pg_ctl", s.ctlArgs("restart")...)
}

// Stop stops the server (immediate mode: nothing of it is kept) and removes
// its directory.
func (s *PrivateServer) Stop() error {
	err := s.run(context.Background(), "pg_ctl", "-D", s.dataDir(), "-m", "immediate", "-w", "stop")
	return errors.Join(err, os.RemoveAll(s.dir))
}

// StopCommand is the shell command that stops the server and removes it,
// for one left running on purpose.
func (s *PrivateServer) StopCommand() string {
	stop := fmt.Sprintf("%s -D %s -m immediate stop", filepath.Join(s.bin, "pg_ctl"), s.dataDir())
	if s.runAs != nil {
		stop = "runuser -u " + s.runAs.Username + " -- " + stop
	}
	return stop + " && rm -rf " + s.dir
}

func (s *PrivateServer) start(ctx context.Context) error {
	return s.run(ctx, "pg_ctl", s.ctlArgs("start")...)
}

// ctlArgs are pg_ctl's arguments for action, with the server's settings.
func (s *PrivateServer) ctlArgs(action string) []string {
	opts := []string{"-p", strconv.Itoa(s.port), "-k", s.dir, "-c", "max_connections=" + strconv.Itoa(s.maxConns)}
	for _, setting := range privateServerSettings {
		opts = append(opts, "-c", setting)
	}
	return []string{"-D", s.dataDir(), "-l", filepath.Join(s.dir, "postgres.log"), "-m", "fast", "-w", "-t", "60", "-o", strings.Join(opts, " "), action}
}

func (s *PrivateServer) dataDir() string { return filepath.Join(s.dir, "data") }

// run runs one of the server's binaries as the server's user.
func (s *PrivateServer) run(ctx context.Context, tool string, args ...string) error {
	path := filepath.Join(s.bin, tool)
	cmd := exec.CommandContext(ctx, path, args...)
	if s.runAs != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", s.runAs.Username, "--", path}, args...)...)
	}
	cmd.Dir = s.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("private Postgres: %s %s: %w\n%s", tool, args[len(args)-1], err, out)
	}
	return nil
}

// chown gives dir to the server's user.
func (s *PrivateServer) chown(dir string) error {
	if s.runAs == nil {
		return nil
	}
	uid, err := strconv.Atoi(s.runAs.Uid)
	if err != nil {
		return fmt.Errorf("private Postgres: uid of %s: %w", s.runAs.Username, err)
	}
	gid, err := strconv.Atoi(s.runAs.Gid)
	if err != nil {
		return fmt.Errorf("private Postgres: gid of %s: %w", s.runAs.Username, err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("private Postgres: give %s to %s: %w", dir, s.runAs.Username, err)
	}
	return nil
}

// freePort asks the kernel for a loopback port no one listens on.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// RestartServer is the outage of a private server: a real restart of it
// (see [PrivateServer.Restart]).
type RestartServer struct {
	Server *PrivateServer
}

// Break implements Outage.
func (r RestartServer) Break(ctx context.Context) error {
	if err := r.Server.Restart(ctx); err != nil {
		return fmt.Errorf("outage: %w", err)
	}
	conn, err := connectPatiently(ctx, r.Server.URL())
	if err != nil {
		return fmt.Errorf("outage: Postgres did not come back: %w", err)
	}
	return conn.Close(ctx)
}

func (r RestartServer) String() string {
	return "the run's private Postgres server restarted with pg_ctl restart -m fast (every database and every connection on it)"
}

// connectPatience is how long connectPatiently keeps trying.
const connectPatience = time.Minute
