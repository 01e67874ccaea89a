package chaos

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The private server is a real server of its own: it answers on its port,
// a restart ends its sessions (and no one else's), and Stop removes it.
func TestPrivateServerRestartsAndStops(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("/usr/lib/postgresql/*/bin")
	require.NoError(t, err)
	require.Len(t, dirs, 1, "want the server binaries of one Postgres version under /usr/lib/postgresql (apt-get install postgresql)")
	ctx := context.Background()
	srv, err := StartPrivateServer(ctx, PrivateServerConfig{BinDir: dirs[0]})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = srv.Stop()
		}
	})

	conn, err := pgx.Connect(ctx, srv.URL())
	require.NoError(t, err)
	var before int
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&before))

	require.NoError(t, RestartServer{Server: srv}.Break(ctx))
	require.Error(t, conn.Ping(ctx), "a restart ends the sessions open before it")
	again, err := pgx.Connect(ctx, srv.URL())
	require.NoError(t, err, "the server answers again once Break returns")
	require.NoError(t, again.Close(ctx))

	require.NoError(t, srv.Stop())
	stopped = true
	require.NoDirExists(t, srv.dir)
	_, err = pgx.Connect(ctx, srv.URL())
	require.Error(t, err, "nothing answers after Stop")
}
