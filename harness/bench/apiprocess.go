package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// apiStartTimeout bounds the wait for a child api to answer /healthz.
const apiStartTimeout = 30 * time.Second

// startAPI runs the api program at path as a child process on a free
// loopback port of the database at url, with migrations off and no
// publish rate limit (the scenarios measure publishing, not the limit),
// and returns it with its base URL once it answers /healthz.
func startAPI(ctx context.Context, path string, args []string, url, secretKey string) (*process, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p, err := startProcess("api", path, args,
		"HERALD_DATABASE_URL="+url,
		"HERALD_SECRET_KEY="+secretKey,
		"HERALD_MIGRATE=false",
		"HERALD_API_ADDR="+addr,
		"HERALD_PUBLISH_RATE=-1",
	)
	if err != nil {
		return nil, "", err
	}
	base := "http://" + addr
	deadline := time.Now().Add(apiStartTimeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, base, nil
			}
		}
		if _, err := p.Usage(); err != nil {
			return nil, "", err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_, _ = p.Stop(context.WithoutCancel(ctx))
			return nil, "", fmt.Errorf("the api at %s did not answer /healthz within %s", base, apiStartTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
