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
		{[]string{"--traffic", "-5s"}, "Traffic (-5s)"},
		{[]string{"--traffic", "2m"}, "to check the levelling off"},
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
	require.Contains(t, stderr.String(), "-traffic duration")
}
