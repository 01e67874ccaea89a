//go:build !linux

package database

import (
	"syscall"
	"time"
)

// setTCPUserTimeout does nothing: TCP_USER_TIMEOUT is Linux's. Keepalive
// probes still drop an idle connection to a dead peer.
func setTCPUserTimeout(syscall.RawConn, time.Duration) error { return nil }
