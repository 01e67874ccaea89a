package api

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/heraldhq/herald/internal/auth"
)

type createKeyRequest struct {
	Name string `json:"name"`
}

// createdKey is the only response that ever holds a key.
type createdKey struct {
	auth.APIKey
	Key string `json:"key"`
}

func (s *Server) listOperatorKeys(w http.ResponseWriter, r *http.Request) error {
	return s.listKeys(w, r, "")
}

func (s *Server) listTenantKeys(w http.ResponseWriter, r *http.Request) error {
	return s.listKeys(w, r, chi.URLParam(r, "tenantID"))
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, tenantID string) error {
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	keys, err := auth.ListAPIKeys(r.Context(), s.pool, tenantID, req)
	if err != nil {
		return err
	}
	return writePage(w, keys)
}

func (s *Server) createOperatorKey(w http.ResponseWriter, r *http.Request) error {
	return s.createKey(w, r, "")
}

func (s *Server) createTenantKey(w http.ResponseWriter, r *http.Request) error {
	return s.createKey(w, r, chi.URLParam(r, "tenantID"))
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, tenantID string) error {
	var req createKeyRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		return err
	}
	if p := checkText("name", req.Name, 200); p != nil {
		return p
	}
	k, key, err := auth.CreateAPIKeyBy(r.Context(), s.pool, principal(r), tenantID, req.Name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, createdKey{APIKey: k, Key: key})
}

func (s *Server) revokeOperatorKey(w http.ResponseWriter, r *http.Request) error {
	return s.revokeKey(w, r, "")
}

func (s *Server) revokeTenantKey(w http.ResponseWriter, r *http.Request) error {
	return s.revokeKey(w, r, chi.URLParam(r, "tenantID"))
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, tenantID string) error {
	id, err := uuidParam(r, "keyID", "API key")
	if err != nil {
		return err
	}
	k, err := auth.RevokeAPIKey(r.Context(), s.pool, tenantID, id)
	s.keys.Forget()
	if errors.Is(err, auth.ErrKeyNotFound) {
		return notFound("API key " + id.String())
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, k)
}
