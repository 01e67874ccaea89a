package receiver

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/heraldhq/herald/signing"
)

// Handler receives webhooks into the inbox. For each POST it verifies the
// signature on the raw body, decodes the payload's envelope, stores the
// event with INSERT … ON CONFLICT (source, webhook_id) DO NOTHING and
// answers:
//
//   - 200 when the event is stored, now or by an earlier copy;
//   - 400 when the signature, timestamp or headers are wrong (the body
//     gives no reason) or the verified body is not a webhook payload (the
//     body says why: the sender is authentic and can fix it);
//   - 405 for a method other than POST;
//   - 413 when the body is over VerifyConfig.MaxBodyBytes;
//   - 503 when the event could not be stored, so the sender retries.
//
// No code of the consumer runs before the answer: a Worker processes the
// inbox afterwards. A Handler is safe for concurrent use.
type Handler struct {
	db     DB
	source string
	rv     *requestVerifier
}

// NewHandler returns a Handler storing into db, normally a *pgxpool.Pool
// on which Migrate has run, and verifying with cfg.
//
// source names the sender whose webhooks it receives, such as "herald" or
// "acme"; webhook IDs are unique per source. A multi-tenant consumer mounts
// one Handler per tenant, each with its source and secrets. NewHandler
// fails when source is empty or cfg has no secrets.
func NewHandler(db DB, source string, cfg VerifyConfig) (*Handler, error) {
	if db == nil {
		return nil, errors.New("new handler: the database is required")
	}
	if source == "" {
		return nil, errors.New(`new handler: source is required: name the sender, such as "herald"`)
	}
	rv, err := newRequestVerifier(cfg)
	if err != nil {
		return nil, fmt.Errorf("new handler: %w", err)
	}
	return &Handler{db: db, source: source, rv: rv}, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhooks are delivered with POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := h.rv.verify(r)
	if err != nil {
		h.rv.reject(w, r, err)
		return
	}
	webhookID := r.Header.Get(signing.HeaderID)
	var ev Event
	if err := decodePayload(body, &ev); err != nil {
		h.rv.logger.WarnContext(r.Context(), "webhook rejected", "error", err, "source", h.source, "webhook_id", webhookID)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, err = h.db.Exec(r.Context(), insertEvent, h.source, webhookID, ev.Type, ev.ObjectID, ev.Version, body)
	if err != nil {
		h.rv.logger.ErrorContext(r.Context(), "webhook not stored; answering 503 so the sender retries",
			"error", err, "source", h.source, "webhook_id", webhookID, "type", ev.Type)
		http.Error(w, "webhook not stored; retry later", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}
