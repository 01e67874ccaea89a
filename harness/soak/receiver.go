package soak

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"

	"github.com/heraldhq/herald/signing"
)

// The receiver's paths, one per endpoint.
const (
	mainPath    = "/main"
	laggingPath = "/lagging"
)

// receiver is the endpoints' HTTP handler. The main endpoint answers 500
// to a share Fail of its requests and holds a share Hold until the sender
// gives up; every other request is answered 200 and its message counted as
// received. The lagging endpoint answers 200 to all.
type receiver struct {
	fail, hold float64

	mu       sync.Mutex
	received map[string]map[string]int // path → message id → 200 answers
	answers  map[string]int            // "500", "held", "200"
}

func newReceiver(cfg Config) *receiver {
	return &receiver{
		fail:     cfg.Fail,
		hold:     cfg.Hold,
		received: map[string]map[string]int{mainPath: {}, laggingPath: {}},
		answers:  map[string]int{},
	}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.Header.Get(signing.HeaderID), "msg_")
	if _, known := rc.received[r.URL.Path]; !ok || !known {
		http.Error(w, "unknown endpoint or no webhook-id", http.StatusNotFound)
		return
	}
	if r.URL.Path == mainPath {
		switch u := rand.Float64(); {
		case u < rc.fail:
			rc.count("500")
			w.WriteHeader(http.StatusInternalServerError)
			return
		case u < rc.fail+rc.hold:
			rc.count("held")
			<-r.Context().Done()
			return
		}
	}
	rc.mu.Lock()
	rc.received[r.URL.Path][id]++
	rc.answers["200"]++
	rc.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (rc *receiver) count(answer string) {
	rc.mu.Lock()
	rc.answers[answer]++
	rc.mu.Unlock()
}

// missing returns how many of ids path never answered 200, and how many
// of them it answered 200 more than once.
func (rc *receiver) missing(path string, ids []string) (missing, twice int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, id := range ids {
		switch n := rc.received[path][id]; {
		case n == 0:
			missing++
		case n > 1:
			twice++
		}
	}
	return missing, twice
}

// answered returns a copy of the counts of answers.
func (rc *receiver) answered() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]int, len(rc.answers))
	for k, v := range rc.answers {
		out[k] = v
	}
	return out
}
