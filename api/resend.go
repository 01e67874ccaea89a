package api

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/deliverylog"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/replay"
)

type resendResponse struct {
	DeliveryID     string                `json:"delivery_id"`
	MessageID      string                `json:"message_id"`
	EndpointID     string                `json:"endpoint_id"`
	PreviousStatus deliverystatus.Status `json:"previous_status,omitempty"`
}

// resend is POST /v1/tenants/{tenantID}/messages/{messageID}/endpoints/{endpointID}/resend:
// the delivery is sent again now, whatever its status; a pending one's next
// attempt is brought forward (replay.ResendTx).
func (s *Server) resend(w http.ResponseWriter, r *http.Request) error {
	m, err := s.message(r)
	if err != nil {
		return err
	}
	endpointID, err := s.endpointID(r)
	if err != nil {
		return err
	}
	var resent replay.Resent
	err = pgx.BeginFunc(r.Context(), s.pool, func(tx pgx.Tx) error {
		resent, err = replay.ResendTx(r.Context(), tx, s.jobs, m.ID, endpointID)
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, resendResponse{
		DeliveryID: resent.DeliveryID.String(), MessageID: m.ID.String(), EndpointID: endpointID.String(),
		PreviousStatus: resent.PreviousStatus,
	})
}

// sendTestEvent is POST /v1/tenants/{tenantID}/endpoints/{endpointID}/test:
// it publishes a herald.test event, keeps the dispatcher from fanning it
// out, and sends it to this endpoint only (replay.SendTestEventTx, which the
// portal calls too).
func (s *Server) sendTestEvent(w http.ResponseWriter, r *http.Request) error {
	endpointID, err := s.endpointID(r)
	if err != nil {
		return err
	}
	tenantID := chi.URLParam(r, "tenantID")
	var m Message
	err = pgx.BeginFunc(r.Context(), s.pool, func(tx pgx.Tx) error {
		id, err := replay.SendTestEventTx(r.Context(), tx, s.jobs, tenantID, endpointID)
		if err != nil {
			return err
		}
		read, err := deliverylog.GetMessage(r.Context(), tx, tenantID, id)
		if err != nil {
			return fmt.Errorf("read back test message: %w", err)
		}
		m = messageJSON(read)
		return nil
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, m)
}
