package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/scratchdb"
)

// A small run prints every table, writes the text and the SVG, and drops
// the databases it made.
func TestRunSmall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	server := pgtest.Server(t)
	prefix := scratchdb.UniqueName("sim_test_") + "_"
	var out bytes.Buffer

	err := run([]string{"--small", "--events", "60", "--out", dir, "--db-prefix", prefix, "--database-url", server.AdminURL()}, &out)
	require.NoError(t, err)
	text := out.String()
	for _, heading := range []string{"== handlers, one delivery at a time", "== handlers, deliveries racing",
		"== retention", "== crash after the dedupe insert", "== sender retries", "run date: "} {
		require.Contains(t, text, heading)
	}
	written, err := os.ReadFile(filepath.Join(dir, "output.txt"))
	require.NoError(t, err)
	require.Equal(t, text, string(written))
	svg, err := os.ReadFile(filepath.Join(dir, "jitter.svg"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(svg), "<svg"))

	conn, err := pgx.Connect(t.Context(), server.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	var left int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname LIKE $1", prefix+"%").Scan(&left))
	require.Zero(t, left, "every sim database is dropped")
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--seed", "4294967296"}, "does not fit in 32 bits"},
		{[]string{"--events", "-5"}, "Events is -5"},
		{[]string{"--db-prefix", "9bad"}, "--db-prefix"},
		{[]string{"--db-prefix", "bad-name"}, "--db-prefix"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, "no-such-flag"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := run(tt.args, &out)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}
