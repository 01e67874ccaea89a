// Package blackhole is a loopback TCP proxy that can stop forwarding
// without closing anything: what a client sees of a database whose network
// path died in a failover, or of a proxy (pgbouncer, a cloud SQL proxy)
// whose far side went away. Nothing is refused or reset; the sockets stay
// open, the kernel acknowledges every byte and every keepalive probe, and
// no reply ever comes. Only a deadline on the client's side notices.
//
//	proxy, err := blackhole.Listen("127.0.0.1:5432")
//	… connect through proxy.Addr() …
//	proxy.BlackHole()  // every connection goes silent; so do new ones
//	proxy.ForwardNew() // new connections work again; the old stay silent
package blackhole

import (
	"net"
	"sync"
)

// Proxy forwards the connections it accepts on loopback to a target
// address. It is safe for concurrent use.
type Proxy struct {
	target   string
	listener net.Listener
	done     chan struct{} // closed by Close; wakes the parked copies

	mu        sync.Mutex
	silent    bool // connections accepted now are black holes
	conns     []*link
	closeOnce sync.Once
}

// link is one client connection and its connection to the target (nil
// for a connection accepted while the proxy was silent).
type link struct {
	client, target net.Conn
	mu             sync.Mutex
	silent         bool
}

func (l *link) isSilent() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.silent
}

// Listen starts a proxy on 127.0.0.1 (a port of the system's choosing)
// that forwards to target.
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, listener: ln, done: make(chan struct{})}
	go p.accept()
	return p, nil
}

// Addr is the host:port clients connect to.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// BlackHole stops forwarding, in both directions, on every connection
// open now and on every one accepted until ForwardNew. Their sockets stay
// open: reads on the client's side wait for ever, writes succeed.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent = true
	for _, l := range p.conns {
		l.mu.Lock()
		l.silent = true
		l.mu.Unlock()
	}
}

// ForwardNew forwards the connections accepted from now on, as a database
// that came back (or its standby, promoted) would answer new connections;
// the black-holed ones stay silent.
func (p *Proxy) ForwardNew() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent = false
}

// Close stops the proxy and closes every connection it holds.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.done)
		err = p.listener.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range p.conns {
			_ = l.client.Close()
			if l.target != nil {
				_ = l.target.Close()
			}
		}
	})
	return err
}

func (p *Proxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		go p.serve(client)
	}
}

func (p *Proxy) serve(client net.Conn) {
	p.mu.Lock()
	silent := p.silent
	l := &link{client: client, silent: silent}
	p.conns = append(p.conns, l)
	p.mu.Unlock()
	if silent {
		return // held open, never read, until Close
	}
	target, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	l.target = target
	closed := p.isClosed()
	p.mu.Unlock()
	if closed {
		_ = target.Close()
		return
	}
	go p.copy(l, target, client)
	go p.copy(l, client, target)
}

func (p *Proxy) isClosed() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// copy forwards src to dst until either ends, or, once the link is
// silent, drops what it read and parks, reading no more, until Close: the
// peer's writes then fill the socket buffers, as they would towards a host
// that no longer answers, and nothing is closed.
func (p *Proxy) copy(l *link, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if l.isSilent() {
			<-p.done
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			// One side ended or failed: end the other, as a proxy does.
			_ = dst.Close()
			_ = src.Close()
			return
		}
	}
}
