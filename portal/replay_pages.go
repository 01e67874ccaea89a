package portal

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/deliverylog"
	"github.com/heraldhq/herald/internal/page"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/retention"
)

// recentReplays is how many replays the endpoint page lists.
const recentReplays = 5

// replayView is a replay and its progress as the pages show it.
type replayView struct {
	replay.Replay
	EndpointURL string
}

// Percent is how much of the replay is done, 0 to 100. A replay with
// nothing to send is complete at 100.
func (r replayView) Percent() int {
	if r.Total == 0 {
		if r.Completed() {
			return 100
		}
		return 0
	}
	return min(100, r.Done*100/r.Total)
}

// Completed reports whether the replay has queued everything and every
// queued delivery has an outcome.
func (r replayView) Completed() bool {
	return r.Status == replay.StatusCompleted && r.Done >= r.Total
}

// Max is the progress bar's maximum: at least 1, so an empty replay's bar
// can show full.
func (r replayView) Max() int { return max(r.Total, 1) }

// BarValue is the progress bar's value.
func (r replayView) BarValue() int {
	if r.Total == 0 && r.Completed() {
		return 1
	}
	return r.Done
}

// progressJSON is what portal.js polls while a replay runs.
type progressJSON struct {
	Total     int  `json:"total"`
	Enqueued  int  `json:"enqueued"`
	Done      int  `json:"done"`
	Percent   int  `json:"percent"`
	Completed bool `json:"completed"`
}

// resend queues one more attempt of a delivery, due now, with the trigger
// "manual" and the message's webhook-id; a pending delivery's next attempt
// is brought forward.
func (p *Portal) resend(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	id, err := parseID(r, "id")
	if err != nil {
		return err
	}
	d, err := deliverylog.GetDelivery(ctx, p.pool, s.TenantID, id)
	if errors.Is(err, deliverylog.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		_, err := replay.ResendTx(ctx, tx, p.jobs, d.MessageID, d.EndpointID)
		return err
	})
	back := Path + "/messages/" + d.MessageID.String()
	switch {
	case errors.Is(err, replay.ErrEndpointDisabled):
		return errEndpointDisabled
	case errors.Is(err, replay.ErrNotFound):
		return errNotFound
	case err != nil:
		return err
	}
	redirectDone(w, r, back, "resent")
	return nil
}

var errEndpointDisabled = &pageError{status: http.StatusConflict, heading: "The endpoint is disabled",
	message: "Nothing is sent to a disabled endpoint. Enable it on its page first, then try again."}

// sendTestEvent sends a herald.test event to this endpoint only.
func (p *Portal) sendTestEvent(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	e, err := p.loadEndpoint(ctx, r, s)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		_, err := replay.SendTestEventTx(ctx, tx, p.jobs, s.TenantID, e.ID)
		return err
	})
	switch {
	case errors.Is(err, replay.ErrEndpointDisabled):
		return errEndpointDisabled
	case err != nil:
		return err
	}
	redirectDone(w, r, Path+"/endpoints/"+e.ID.String(), "tested")
	return nil
}

// startReplay starts a background replay of the endpoint since the chosen
// time and shows its progress page.
func (p *Portal) startReplay(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	e, err := p.loadEndpoint(ctx, r, s)
	if err != nil {
		return err
	}
	kept, err := retention.TenantRetention(ctx, p.pool, s.TenantID)
	if err != nil {
		return err
	}
	back, err := time.ParseDuration(r.PostFormValue("since"))
	if err != nil || !slices.ContainsFunc(replayPeriods(kept), func(o option) bool { return o.Value == r.PostFormValue("since") }) {
		if err == nil && back > kept {
			return beforeHorizonPage(time.Now().Add(-kept), kept)
		}
		return badRequest("Choose from the list how far back the replay reaches.")
	}
	now := time.Now()
	params := replay.Params{EndpointID: e.ID, Since: now.Add(-back), Now: now, OnlyFailed: r.PostFormValue("only_failed") == "true"}
	var started replay.Replay
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		started, err = replay.StartTx(ctx, tx, p.jobs, params)
		return err
	})
	var horizon *replay.BeforeHorizonError
	switch {
	case errors.Is(err, replay.ErrEndpointDisabled):
		return errEndpointDisabled
	case errors.As(err, &horizon):
		return beforeHorizonPage(horizon.Earliest, horizon.Retention)
	case err != nil:
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("%s/endpoints/%s/replays/%s", Path, e.ID, started.ID), http.StatusSeeOther)
	return nil
}

// beforeHorizonPage refuses a replay reaching further back than the
// tenant's history is kept, and says from when one may start.
func beforeHorizonPage(earliest time.Time, kept time.Duration) error {
	return &pageError{status: http.StatusUnprocessableEntity, heading: "That is further back than your history is kept",
		message: fmt.Sprintf("Messages are kept for %s, so a replay can start no earlier than %s. Choose a shorter period.",
			humanDuration(kept), earliest.UTC().Format("2006-01-02 15:04:05 UTC"))}
}

// loadReplay returns the session's replay named in the path.
func (p *Portal) loadReplay(r *http.Request, s *session) (replayView, error) {
	e, err := p.loadEndpoint(r.Context(), r, s)
	if err != nil {
		return replayView{}, err
	}
	id, err := parseID(r, "replayID")
	if err != nil {
		return replayView{}, err
	}
	rep, err := replay.Get(r.Context(), p.pool, s.TenantID, e.ID, id)
	if errors.Is(err, replay.ErrReplayNotFound) {
		return replayView{}, errNotFound
	}
	if err != nil {
		return replayView{}, err
	}
	return replayView{Replay: rep, EndpointURL: e.URL}, nil
}

// replayProgressRefresh is how often the progress page reloads itself in
// browsers without JavaScript.
const replayProgressRefresh = 2

func (p *Portal) replayDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	rep, err := p.loadReplay(r, s)
	if err != nil {
		return err
	}
	pg := s.page("Replay", "endpoints", struct{ Replay replayView }{rep})
	if !rep.Completed() {
		pg.Refresh = replayProgressRefresh
	}
	p.render(w, r, http.StatusOK, "replay", pg)
	return nil
}

func (p *Portal) replayProgress(w http.ResponseWriter, r *http.Request, s *session) error {
	rep, err := p.loadReplay(r, s)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(progressJSON{
		Total: rep.Total, Enqueued: rep.Enqueued, Done: rep.Done, Percent: rep.Percent(), Completed: rep.Completed(),
	})
}

// endpointReplays lists the endpoint's latest replays for its page.
func (p *Portal) endpointReplays(r *http.Request, s *session, e endpointView) ([]replayView, error) {
	replays, err := replay.List(r.Context(), p.pool, s.TenantID, e.ID, page.Request{Limit: recentReplays})
	if err != nil {
		return nil, err
	}
	views := make([]replayView, len(replays.Items))
	for i, rep := range replays.Items {
		views[i] = replayView{Replay: rep, EndpointURL: e.URL}
	}
	return views, nil
}
