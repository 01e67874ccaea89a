package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// With --trusted-proxy-header (here from its variable) the request log
// names the address the proxy in front of Herald put last in that header.
func TestTrustedProxyHeaderNamesTheClientInTheLog(t *testing.T) {
	t.Parallel()
	cmd := command(t, []string{"HERALD_TRUSTED_PROXY_HEADER=X-Forwarded-For", "HERALD_LOG_FORMAT=json"})
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	type record struct{ Msg, Addr, Path, Client string }
	records := make(chan record, 100)
	go func() {
		defer close(records)
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			var r record
			if json.Unmarshal(lines.Bytes(), &r) == nil {
				records <- r
			}
		}
	}()
	next := func() record {
		t.Helper()
		select {
		case r, ok := <-records:
			require.True(t, ok, "the api exited")
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("no log line within 30s")
			return record{}
		}
	}
	var base string
	for base == "" {
		if r := next(); r.Msg == "api listening" {
			base = "http://" + r.Addr
		}
	}

	req, err := http.NewRequest("GET", base+"/healthz", nil)
	require.NoError(t, err)
	req.Header.Set("X-Forwarded-For", "198.51.100.9, 203.0.113.7")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	for {
		r := next()
		if r.Msg == "http request" && r.Path == "/healthz" {
			require.Equal(t, "203.0.113.7", r.Client, "the proxy's own entry, the last one")
			return
		}
	}
}
