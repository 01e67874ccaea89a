package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/replay"
)

type createReplayRequest struct {
	Since      *time.Time `json:"since"`
	Until      *time.Time `json:"until"`
	OnlyFailed bool       `json:"only_failed"`
}

// createReplay is POST …/endpoints/{endpointID}/replays: it answers 202 at
// once with the replay; a dispatcher works it in the background.
func (s *Server) createReplay(w http.ResponseWriter, r *http.Request) error {
	endpointID, err := s.endpointID(r)
	if err != nil {
		return err
	}
	var req createReplayRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Since == nil {
		return invalid("since", "since is required: the time (RFC 3339) from which to replay, e.g. \"2026-12-01T00:00:00Z\"")
	}
	p := replay.Params{EndpointID: endpointID, Since: *req.Since, OnlyFailed: req.OnlyFailed}
	if req.Until != nil {
		p.Until = *req.Until
	}
	var rep replay.Replay
	err = pgx.BeginFunc(r.Context(), s.pool, func(tx pgx.Tx) error {
		rep, err = replay.StartTx(r.Context(), tx, s.jobs, p)
		return err
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", r.URL.Path+"/"+rep.ID.String())
	return writeJSON(w, http.StatusAccepted, rep)
}

func (s *Server) getReplay(w http.ResponseWriter, r *http.Request) error {
	endpointID, err := s.endpointID(r)
	if err != nil {
		return err
	}
	id, err := uuidParam(r, "replayID", "replay")
	if err != nil {
		return err
	}
	rep, err := replay.Get(r.Context(), s.pool, chi.URLParam(r, "tenantID"), endpointID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rep)
}

func (s *Server) listReplays(w http.ResponseWriter, r *http.Request) error {
	endpointID, err := s.endpointID(r)
	if err != nil {
		return err
	}
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	replays, err := replay.List(r.Context(), s.pool, chi.URLParam(r, "tenantID"), endpointID, req)
	if err != nil {
		return err
	}
	return writePage(w, replays)
}
