package api

import (
	"context"
	"net/http"
	"time"

	"github.com/heraldhq/herald/migrations"
)

// readyTimeout bounds the readiness check so a stuck database makes the
// probe fail rather than hang.
const readyTimeout = 3 * time.Second

// healthz says the process is up; it touches nothing else.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	_ = writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz says the database is reachable and its migrations are current.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := migrations.Check(ctx, s.pool); err != nil {
		s.logger.WarnContext(r.Context(), "not ready", "request_id", requestIDFrom(r.Context()), "error", err)
		writeProblem(w, r, problem(http.StatusServiceUnavailable, "not-ready", "not ready: "+err.Error()))
		return
	}
	_ = writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
