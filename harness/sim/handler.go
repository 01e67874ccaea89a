package sim

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/signing"
)

// maxBody bounds a request body; the simulated payloads are far smaller.
const maxBody = 64 << 10

// handler is the HTTP endpoint of one design: verify the signature on the
// raw body, decode it, run the design. A bad request gets 400 (413 when too
// large) and a message; a design's error gets 500 so the sender retries.
type handler struct {
	design   design
	db       *pgxpool.Pool
	verifier signing.Verifier
	accounts int

	mu         sync.Mutex
	unexpected int   // 500s that are not the design's own failure
	firstErr   error // the first of them
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "send webhooks with POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		http.Error(w, fmt.Sprintf("body larger than %d bytes", maxBody), http.StatusRequestEntityTooLarge)
		return
	}
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := h.verifier.Verify(r.Header, body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m, err := decode(r.Header.Get(signing.HeaderID), body, h.accounts)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := h.design.handle(r.Context(), h.db, m); err != nil {
		if !errors.Is(err, errKeyTaken) {
			h.recordUnexpected(err)
		}
		http.Error(w, "not processed; retry later", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (h *handler) recordUnexpected(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unexpected++
	if h.firstErr == nil {
		h.firstErr = err
	}
}

// failure returns an error if the design failed for a reason other than
// its own, which would make its row measure something else.
func (h *handler) failure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unexpected == 0 {
		return nil
	}
	return fmt.Errorf("design %s answered 500 to %d deliveries for reasons outside the design; the first: %w", h.design.name, h.unexpected, h.firstErr)
}

// serve runs h on a loopback port and returns its URL and a stop function.
func serve(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen on loopback: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // returns http.ErrServerClosed once stop closes it
	}()
	stop = func() {
		_ = srv.Close()
		<-done
	}
	return "http://" + ln.Addr().String() + "/webhooks", stop, nil
}
