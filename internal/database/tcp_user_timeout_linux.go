package database

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setTCPUserTimeout sets TCP_USER_TIMEOUT on the socket: the kernel drops
// the connection once sent data has gone unacknowledged for d, and, with
// keepalives on, once probes have gone unanswered for d.
func setTCPUserTimeout(raw syscall.RawConn, d time.Duration) error {
	var err error
	ctrlErr := raw.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
	return errors.Join(ctrlErr, err)
}
