package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFlagsAreChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--postgres", "reboot"}, `--postgres "reboot": want restart, connections or none`},
		{[]string{"--database-url", "postgres://127.0.0.1:5432/x", "--postgres", "restart"}, "--postgres=restart restarts the run's private server"},
		{[]string{"--events", "-5"}, "Events is -5"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		err := run(tc.args, &stdout, &stderr)
		require.ErrorContains(t, err, tc.want, "args %q", tc.args)
		require.Empty(t, stdout.String())
	}
}

func TestHelpExitsCleanly(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.NoError(t, run([]string{"--help"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "-postgres string")
}
