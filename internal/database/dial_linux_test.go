package database_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/heraldhq/herald/internal/database"
)

// The kernel drops a connection whose peer stopped acknowledging: every
// socket the pool opens has keepalives and TCP_USER_TIMEOUT.
func TestPoolSocketsHaveKeepAliveAndUserTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                  string
		timeouts              database.Timeouts
		keepAlive, idle, user int
	}{
		{name: "defaults", keepAlive: 1, idle: 10, user: 20000},
		{name: "set", timeouts: database.Timeouts{KeepAlive: 7 * time.Second, TCPUser: 9 * time.Second}, keepAlive: 1, idle: 7, user: 9000},
		{name: "off", timeouts: database.Timeouts{KeepAlive: -1, TCPUser: -1}, keepAlive: 0, user: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := open(t, emptyDatabase(t, ""), database.Options{MaxConns: 1, Timeouts: tc.timeouts})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { _ = ln.Close() })

			conn, err := pool.Config().ConnConfig.DialFunc(context.Background(), "tcp", ln.Addr().String())
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			raw, err := conn.(*net.TCPConn).SyscallConn()
			require.NoError(t, err)
			opt := func(level, name int) int {
				var v int
				var getErr error
				require.NoError(t, raw.Control(func(fd uintptr) { v, getErr = unix.GetsockoptInt(int(fd), level, name) }))
				require.NoError(t, getErr)
				return v
			}
			require.Equal(t, tc.keepAlive, opt(unix.SOL_SOCKET, unix.SO_KEEPALIVE), "SO_KEEPALIVE")
			require.Equal(t, tc.user, opt(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT), "TCP_USER_TIMEOUT (ms)")
			if tc.keepAlive == 1 {
				require.Equal(t, tc.idle, opt(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE), "TCP_KEEPIDLE (s)")
				require.Equal(t, tc.idle, opt(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL), "TCP_KEEPINTVL (s)")
				require.Equal(t, 3, opt(unix.IPPROTO_TCP, unix.TCP_KEEPCNT), "TCP_KEEPCNT")
			}
		})
	}
}
