package chaos

import (
	"context"
	"errors"
	"fmt"
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
