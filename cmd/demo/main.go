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

	"github.com/heraldhq/herald/cmd/internal/flagenv"
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

// Defaults of the demo's settings.
const (
	// defaultAPIURL is --api-url's default: the api's own default address.
	defaultAPIURL = "http://localhost:8080"
	// defaultReceiverAddr is --receiver-addr's default.
	defaultReceiverAddr = "127.0.0.1:8090"
	// defaultTenant is --tenant's default.
	defaultTenant = "demo"
	// defaultEvents is --events's default.
	defaultEvents = 3
	// defaultReadyWait is --ready-wait's default.
	defaultReadyWait = time.Minute
)

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
	fs := flagenv.New("demo")
	var s settings
	fs.StringVar(&s.apiURL, "api-url", defaultAPIURL, "the API's base URL")
	fs.Env("api-url", "HERALD_PUBLIC_URL")
	fs.StringVar(&s.publicURL, "public-url", "", "the API's URL as a person's browser reaches it, for the printout; empty means --api-url")
	fs.StringVar(&s.apiKey, "api-key", "", "an operator API key")
	fs.Env("api-key", "HERALD_BOOTSTRAP_API_KEY")
	fs.StringVar(&s.receiverAddr, "receiver-addr", defaultReceiverAddr, "where the demo receiver listens")
	fs.Env("receiver-addr", "HERALD_DEMO_RECEIVER_ADDR")
	fs.StringVar(&s.receiverURL, "receiver-url", "", "the URL Herald delivers to, reaching --receiver-addr; empty means http://<receiver-addr>/webhooks")
	fs.Env("receiver-url", "HERALD_DEMO_RECEIVER_URL")
	fs.StringVar(&s.tenant, "tenant", defaultTenant, "the demo tenant's id")
	fs.IntVar(&s.events, "events", defaultEvents, "how many events to publish")
	fs.DurationVar(&s.readyWait, "ready-wait", defaultReadyWait, "how long to wait for the API to become ready")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: demo [flags]\n\nSeeds a development Herald with a demo tenant, endpoint and events, and serves\nthe endpoint's receiver. Flags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if s.apiKey == "" {
		return errors.New("--api-key is empty; pass an operator API key or set HERALD_BOOTSTRAP_API_KEY (make run passes its development key)")
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
