package api

import (
	"errors"
	"net/http"

	"github.com/heraldhq/herald/erasure"
)

// Erasure is an erasure as the API shows it: erasure.Erasure and what it
// erases.
type Erasure struct {
	erasure.Erasure
	// Kind is "endpoint" or "tenant".
	Kind string `json:"kind"`
}

// erasurePath is where an erasure is read.
func erasurePath(e erasure.Erasure) string { return "/v1/erasures/" + e.ID.String() }

// writeErasure answers a DELETE of an endpoint or a tenant: 202 Accepted
// while its erasure runs, 200 once it completed, with the erasure as the
// body and its address as the Location.
func writeErasure(w http.ResponseWriter, e erasure.Erasure) error {
	w.Header().Set("Location", erasurePath(e))
	status := http.StatusAccepted
	if e.Status == erasure.StatusCompleted {
		status = http.StatusOK
	}
	return writeJSON(w, status, Erasure{Erasure: e, Kind: e.Kind()})
}

// getErasure is GET /v1/erasures/{erasureID}: an operator key sees every
// erasure, a tenant's key or portal session those of its tenant's
// endpoints (its own erasure deletes them); others are not found.
func (s *Server) getErasure(w http.ResponseWriter, r *http.Request) error {
	id, err := uuidParam(r, "erasureID", "erasure")
	if err != nil {
		return err
	}
	e, err := erasure.Get(r.Context(), s.pool, id)
	if errors.Is(err, erasure.ErrNotFound) {
		return notFound("erasure " + id.String())
	}
	if err != nil {
		return err
	}
	if !principal(r).CanAccess(e.TenantID) {
		return notFound("erasure " + id.String())
	}
	return writeJSON(w, http.StatusOK, Erasure{Erasure: e, Kind: e.Kind()})
}
