package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Outage takes the databases away for a moment, as a Postgres restart does:
// every open connection breaks and new ones fail until it is over.
type Outage interface {
	// Break breaks the connections and returns once the databases accept
	// connections again.
	Break(ctx context.Context) error
	// String says what Break does, for the report.
	String() string
}

// TerminateConnections is the outage of a shared server: it refuses new
// connections to Databases, terminates every open one, waits Down and
// accepts connections again. To its clients it looks like a restart of the
// server; other databases on the server are not touched.
type TerminateConnections struct {
	// AdminURL is a database on the same server that is not in Databases
	// (its "postgres" database), as a superuser.
	AdminURL string
	// Databases are the names of the databases to break.
	Databases []string
	// Down is how long new connections are refused.
	Down time.Duration
}

// Break implements Outage.
func (t TerminateConnections) Break(ctx context.Context) (err error) {
	conn, err := connectPatiently(ctx, t.AdminURL)
	if err != nil {
		return fmt.Errorf("outage: connect to the server: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	allow := func(allowed bool) error {
		for _, db := range t.Databases {
			sql := fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{db}.Sanitize(), allowed)
			if _, err := conn.Exec(context.WithoutCancel(ctx), sql); err != nil {
				return fmt.Errorf("outage: database %s: %w", db, err)
			}
		}
		return nil
	}
	if err := allow(false); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, allow(true)) }()
	if _, err := conn.Exec(ctx, terminateBackends, t.Databases); err != nil {
		return fmt.Errorf("outage: terminate connections: %w", err)
	}
	sleep(ctx, t.Down)
	return nil
}

func (t TerminateConnections) String() string {
	return fmt.Sprintf("every connection to the run's databases terminated, new ones refused for %s (the server is shared: it is not restarted)", t.Down)
}

// RestartCluster restarts the local Postgres cluster with pg_ctlcluster:
// every database on the server, and every client of it, goes through the
// restart.
type RestartCluster struct {
	// AdminURL is a database on the server, used to tell when it is back.
	AdminURL string
}

// Break implements Outage.
func (r RestartCluster) Break(ctx context.Context) error {
	version, err := clusterVersion()
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart").CombinedOutput()
	if err != nil {
		return fmt.Errorf("outage: pg_ctlcluster %s main restart: %w\n%s", version, err, out)
	}
	conn, err := connectPatiently(ctx, r.AdminURL)
	if err != nil {
		return fmt.Errorf("outage: Postgres did not come back: %w", err)
	}
	return conn.Close(ctx)
}

// connectPatience is how long connectPatiently keeps trying.
const connectPatience = time.Minute

// connectPatiently connects to url, trying again for up to a minute while
// the server refuses: it may be restarting, or full (a shared server's
// max_connections).
func connectPatiently(ctx context.Context, url string) (*pgx.Conn, error) {
	deadline := time.Now().Add(connectPatience)
	for {
		conn, err := pgx.Connect(ctx, url)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return conn, err
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func (r RestartCluster) String() string {
	return "the Postgres cluster restarted with pg_ctlcluster restart (the whole server: every database and every client on it)"
}

// clusterVersion is the one Postgres version under /etc/postgresql.
func clusterVersion() (string, error) {
	entries, err := os.ReadDir("/etc/postgresql")
	if err != nil {
		return "", fmt.Errorf("outage: find the local cluster: %w; restarting Postgres needs a Debian-style cluster (pg_ctlcluster)", err)
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() {
			versions = append(versions, e.Name())
		}
	}
	if len(versions) != 1 {
		return "", fmt.Errorf("outage: want one cluster version under /etc/postgresql, found %q", strings.Join(versions, ", "))
	}
	return versions[0], nil
}
