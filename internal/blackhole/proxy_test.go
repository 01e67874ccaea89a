package blackhole_test

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/blackhole"
)

// echo starts a server that sends back what it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, p *blackhole.Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads as many bytes back, waiting up to wait.
func roundTrip(c net.Conn, msg string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func TestBlackHoleSilencesWithoutClosingAndForwardNewLetsNewConnectionsThrough(t *testing.T) {
	t.Parallel()
	p, err := blackhole.Listen(echo(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	old := dial(t, p)
	got, err := roundTrip(old, "ping", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ping", got, "forwards before the black hole")

	p.BlackHole()
	_, err = roundTrip(old, "lost", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "no reply and no close: the connection looks alive")
	during := dial(t, p)
	_, err = roundTrip(during, "lost", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a connection accepted during the black hole is silent too")

	p.ForwardNew()
	after := dial(t, p)
	got, err = roundTrip(after, "pong", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "pong", got, "new connections are forwarded again")
	for _, c := range []net.Conn{old, during} {
		_, err = roundTrip(c, "lost", 300*time.Millisecond)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the black-holed connections stay silent")
	}

	require.NoError(t, p.Close())
	_ = old.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = old.Read(make([]byte, 1))
	require.Error(t, err)
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "Close closes what it holds")
}
