package webhooktest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// ConnectProxy is an HTTP CONNECT proxy on loopback that records what it
// was asked and the local addresses of the connections it made, so a test
// can tell a receiver's connections from the proxy from direct ones.
type ConnectProxy struct {
	// Addr is the proxy's host:port.
	Addr string
	// Authorization, when set, is the Proxy-Authorization a CONNECT must
	// carry; others are answered 407.
	Authorization string

	mu       sync.Mutex
	connects []string
	accepted int
	upstream map[string]bool
	open     map[net.Conn]bool
}

// NewConnectProxy starts a proxy, closed when the test ends.
func NewConnectProxy(t testing.TB) *ConnectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ConnectProxy{Addr: ln.Addr().String(), upstream: make(map[string]bool), open: make(map[net.Conn]bool)}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for conn := range p.open {
			conn.Close() // tunnels a client keeps alive would outlive the test
		}
		p.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.accepted++
			p.open[conn] = true
			p.mu.Unlock()
			wg.Go(func() { p.serve(conn) })
		}
	})
	return p
}

func (p *ConnectProxy) serve(client net.Conn) {
	defer func() {
		client.Close()
		p.mu.Lock()
		delete(p.open, client)
		p.mu.Unlock()
	}()
	br := bufio.NewReader(client)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.connects = append(p.connects, req.Method+" "+req.Host)
	p.mu.Unlock()
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(client, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	if p.Authorization != "" && req.Header.Get("Proxy-Authorization") != p.Authorization {
		_, _ = io.WriteString(client, "HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
		return
	}
	upstream, err := net.Dial("tcp", req.Host)
	if err != nil {
		_, _ = io.WriteString(client, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer upstream.Close()
	p.mu.Lock()
	p.upstream[upstream.LocalAddr().String()] = true
	p.mu.Unlock()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, upstream); done <- struct{}{} }()
	<-done
}

// Connects returns the requests the proxy got, as "CONNECT host:port".
func (p *ConnectProxy) Connects() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.connects...)
}

// Accepted counts the TCP connections made to the proxy.
func (p *ConnectProxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Made reports whether addr is the local address of a connection the
// proxy made to a receiver.
func (p *ConnectProxy) Made(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.upstream[addr]
}
