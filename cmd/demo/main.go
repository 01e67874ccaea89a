// Command demo gives a development Herald something to show: it serves a
// small webhook receiver that verifies every signature, and through the API
// it creates a demo tenant with an endpoint pointing at that receiver,
// publishes a few events, and prints the API's URL, the development API
// key and a portal link. `make run` starts it next to the api and the
// dispatcher; it keeps receiving until stopped.
//
// Running it again reuses the tenant and the endpoint.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/signing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type settings struct {
	apiURL       string
	publicURL    string
	apiKey       string
	receiverAddr string
	receiverURL  string
	tenant       string
	events       int
	readyWait    time.Duration
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var s settings
	fs.StringVar(&s.apiURL, "api-url", config.Env("HERALD_PUBLIC_URL", "http://localhost:8080"), "the API's base URL (env HERALD_PUBLIC_URL)")
	fs.StringVar(&s.publicURL, "public-url", "", "the API's URL as a person's browser reaches it, for the printout; empty means --api-url")
	fs.StringVar(&s.apiKey, "api-key", "", "an operator API key; empty means the env HERALD_BOOTSTRAP_API_KEY")
	fs.StringVar(&s.receiverAddr, "receiver-addr", config.Env("HERALD_DEMO_RECEIVER_ADDR", "127.0.0.1:8090"), "where the demo receiver listens (env HERALD_DEMO_RECEIVER_ADDR)")
	fs.StringVar(&s.receiverURL, "receiver-url", os.Getenv("HERALD_DEMO_RECEIVER_URL"), "the URL Herald delivers to, reaching --receiver-addr; empty means http://<receiver-addr>/webhooks (env HERALD_DEMO_RECEIVER_URL)")
	fs.StringVar(&s.tenant, "tenant", "demo", "the demo tenant's id")
	fs.IntVar(&s.events, "events", 3, "how many events to publish")
	fs.DurationVar(&s.readyWait, "ready-wait", time.Minute, "how long to wait for the API to become ready")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: demo [flags]\n\nSeeds a development Herald with a demo tenant, endpoint and events, and serves\nthe endpoint's receiver. Flags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if s.apiKey == "" {
		s.apiKey = os.Getenv("HERALD_BOOTSTRAP_API_KEY")
	}
	if s.apiKey == "" {
		return errors.New("--api-key is empty; pass an operator API key (make run passes its development key)")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "demo")
	c := &client{base: strings.TrimRight(s.apiURL, "/"), key: s.apiKey, http: &http.Client{Timeout: 10 * time.Second}}

	ln, err := net.Listen("tcp", s.receiverAddr)
	if err != nil {
		return fmt.Errorf("demo receiver: listen on %s: %w (choose another --receiver-addr)", s.receiverAddr, err)
	}
	rcv := &receiver{logger: logger}
	srv := &http.Server{Handler: rcv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	receiverURL := s.receiverURL
	if receiverURL == "" {
		receiverURL = "http://" + ln.Addr().String() + "/webhooks"
	}
	if s.publicURL == "" {
		s.publicURL = s.apiURL
	}

	if err := c.waitReady(ctx, s.readyWait); err != nil {
		return err
	}
	seeded, err := seed(ctx, c, s, receiverURL)
	if err != nil {
		return err
	}
	rcv.setSecret(seeded.secret)
	rcv.refresh = func() (string, error) { return c.secret(ctx, s.tenant, seeded.endpointID) }
	if err := publish(ctx, c, s); err != nil {
		return err
	}
	link, err := c.portalLink(ctx, s.tenant)
	if err != nil {
		return err
	}
	fmt.Printf(`
Herald is running (development mode).

  API          %[1]s/v1     reference: %[1]s/openapi.json
  API key      %[2]s   (development operator key)
  Portal       %[3]s
               (works once, for 15 minutes; mint another with
                curl -X POST -H "Authorization: Bearer %[2]s" %[1]s/v1/tenants/%[4]s/portal-links)
  Demo         tenant %[4]q, endpoint %[5]s -> %[6]s
  Try          curl -H "Authorization: Bearer %[2]s" %[1]s/v1/tenants/%[4]s/messages

Deliveries to the demo receiver are logged below. Stop with Ctrl-C.

`, strings.TrimRight(s.publicURL, "/"), s.apiKey, link, s.tenant, seeded.endpointID, receiverURL)
	<-ctx.Done()
	return nil
}

// receiver is the demo endpoint: it verifies each webhook's signature with
// the endpoint's secret and logs what arrived.
type receiver struct {
	logger  *slog.Logger
	mu      sync.Mutex
	secret  signing.Secret
	refresh func() (string, error)
}

func (r *receiver) setSecret(s string) {
	secret, err := signing.ParseSecret(s)
	if err != nil {
		r.logger.Error("the endpoint's secret does not parse", "error", err)
		return
	}
	r.mu.Lock()
	r.secret = secret
	r.mu.Unlock()
}

func (r *receiver) verifier() signing.Verifier {
	r.mu.Lock()
	defer r.mu.Unlock()
	return signing.Verifier{Secrets: []signing.Secret{r.secret}}
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/webhooks" {
		http.Error(w, "POST webhooks to /webhooks", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 1<<20))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	err = r.verifier().Verify(req.Header, body)
	if err != nil && r.refresh != nil {
		// The secret may have been rotated since the demo started.
		if s, ferr := r.refresh(); ferr == nil {
			r.setSecret(s)
			err = r.verifier().Verify(req.Header, body)
		}
	}
	if err != nil {
		r.logger.Warn("rejected a webhook with a bad signature", "webhook_id", req.Header.Get(signing.HeaderID), "error", err)
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	r.logger.Info("received webhook", "webhook_id", req.Header.Get(signing.HeaderID), "body", string(body))
	w.WriteHeader(http.StatusNoContent)
}
