package database

import (
	"net"
	"strings"
	"syscall"
	"time"
)

// dialer opens a pool's connections within the connect timeout, with TCP
// keepalives and TCP_USER_TIMEOUT on the socket, so that the kernel drops
// a connection whose peer stopped acknowledging (a server or network path
// that died), busy or idle. Zero turns keepAlive or tcpUser off.
func dialer(connect, keepAlive, tcpUser time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: connect, KeepAlive: -1}
	if keepAlive > 0 {
		d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: keepAlive, Interval: keepAlive, Count: keepAliveProbes}
	}
	if tcpUser > 0 {
		d.Control = func(network, _ string, raw syscall.RawConn) error {
			if !strings.HasPrefix(network, "tcp") {
				return nil // a Unix socket has no peer to lose
			}
			return setTCPUserTimeout(raw, tcpUser)
		}
	}
	return d
}
