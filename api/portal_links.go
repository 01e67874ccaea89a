package api

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/heraldhq/herald/internal/auth"
)

type createPortalLinkRequest struct {
	// TTLSeconds is how long the link can be redeemed. Zero means
	// auth.DefaultLinkTTL (15 minutes); at most a day.
	TTLSeconds int64 `json:"ttl_seconds"`
}

type portalLinkResponse struct {
	URL       string    `json:"url"`
	TenantID  string    `json:"tenant_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (s *Server) createPortalLink(w http.ResponseWriter, r *http.Request) error {
	var req createPortalLinkRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		return err
	}
	maxSeconds := int64(auth.MaxLinkTTL / time.Second)
	if req.TTLSeconds < 0 || req.TTLSeconds > maxSeconds {
		return invalid("ttl_seconds", fmt.Sprintf("ttl_seconds must be between 1 and %d (a day); omit it for the default of %d", maxSeconds, int64(auth.DefaultLinkTTL/time.Second)))
	}
	link, err := auth.MintPortalLinkBy(r.Context(), s.pool, principal(r), chi.URLParam(r, "tenantID"), time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, portalLinkResponse{
		URL:       s.publicURL + auth.PortalLoginPath + "?token=" + url.QueryEscape(link.Token),
		TenantID:  link.TenantID,
		ExpiresAt: link.ExpiresAt,
	})
}
