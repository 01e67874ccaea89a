package portal

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/erasure"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/store"
)

// disabledInPortal is the disabled_reason of an endpoint its owner disabled
// here.
const disabledInPortal = "disabled by its owner in the portal"

// endpointForm is the create and edit form's values, as typed.
type endpointForm struct {
	URL         string
	Description string
	EventTypes  []string
	OtherTypes  string
	// Ordering is chosen on the create form only.
	Ordering store.Ordering
	optionsForm
	// Credentials are the authentication and mutual TLS (endpoint_auth.go).
	Credentials credentialsForm
}

// eventTypeInfo is an entry of the event-type catalogue.
type eventTypeInfo struct {
	Name        string
	Description string
}

type endpointFormPage struct {
	// ID is the endpoint being edited; uuid.Nil on the create form.
	ID        uuid.UUID
	Form      endpointForm
	Catalogue []eventTypeInfo
	// Error and Field say what the store refused and which field.
	Error string
	Field string
}

// Editing reports whether the form edits an existing endpoint.
func (d endpointFormPage) Editing() bool { return d.ID != uuid.Nil }

func readEndpointForm(r *http.Request) endpointForm {
	return endpointForm{
		URL:         strings.TrimSpace(r.PostFormValue("url")),
		Description: strings.TrimSpace(r.PostFormValue("description")),
		EventTypes:  r.PostForm["event_types"],
		OtherTypes:  r.PostFormValue("other_types"),
		Ordering:    store.Ordering(r.PostFormValue("ordering")),
		optionsForm: readOptionsForm(r),
		Credentials: readCredentialsForm(r),
	}
}

// subscription is the form's event types: the ticked catalogue entries and
// the typed ones, without repeats. Empty means every type.
func (f endpointForm) subscription() []string {
	types := slices.Clone(f.EventTypes)
	for _, t := range strings.Split(f.OtherTypes, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	if types == nil {
		types = []string{}
	}
	return types
}

// formFor fills the edit form from an endpoint: catalogue types become
// ticked boxes, the rest go into the free-text field.
func formFor(e endpointView, catalogue []eventTypeInfo) endpointForm {
	f := endpointForm{URL: e.URL, Description: e.Description, Ordering: e.Ordering}
	var other []string
	for _, t := range e.EventTypes {
		if slices.ContainsFunc(catalogue, func(c eventTypeInfo) bool { return c.Name == t }) {
			f.EventTypes = append(f.EventTypes, t)
		} else {
			other = append(other, t)
		}
	}
	f.OtherTypes = strings.Join(other, ", ")
	return f
}

func (p *Portal) catalogue(r *http.Request) ([]eventTypeInfo, error) {
	rows, err := p.pool.Query(r.Context(), selectEventTypeCatalogue)
	if err != nil {
		return nil, fmt.Errorf("event type catalogue: %w", err)
	}
	types, err := pgx.CollectRows(rows, pgx.RowToStructByPos[eventTypeInfo])
	if err != nil {
		return nil, fmt.Errorf("event type catalogue: %w", err)
	}
	return types, nil
}

func (p *Portal) renderEndpointForm(w http.ResponseWriter, r *http.Request, s *session, status int, data endpointFormPage) error {
	var err error
	if data.Catalogue, err = p.catalogue(r); err != nil {
		return err
	}
	// Secret values are write-only: a form shown again after a refusal
	// asks for them again rather than echo them into the page.
	for i := range data.Form.Headers {
		if data.Form.Headers[i].Secret {
			data.Form.Headers[i].Value = ""
		}
	}
	title := "Add an endpoint"
	if data.Editing() {
		title = "Edit endpoint"
	}
	p.render(w, r, status, "endpoint_form", s.page(title, "endpoints", data))
	return nil
}

// refused turns the store's validation error into the form's message; any
// other error is returned as it is.
func refused(err error, data *endpointFormPage) bool {
	var verr *store.ValidationError
	if !errors.As(err, &verr) {
		return false
	}
	data.Field = verr.Field
	data.Error = fieldLabel(verr.Field) + " " + verr.Problem
	return true
}

// formRefused is data with the form's own refusal of a field.
func formRefused(data endpointFormPage, verr *store.ValidationError) endpointFormPage {
	refused(verr, &data)
	return data
}

func fieldLabel(field string) string {
	switch field {
	case "url":
		return "The URL"
	case "description":
		return "The description"
	case "event_types":
		return "The event types:"
	case "ordering":
		return "The delivery order"
	case "filter":
		return "The filter"
	case "channels":
		return "The channels:"
	case "headers":
		return "The headers:"
	case "timeout_seconds":
		return "The timeout"
	}
	if label, ok := credentialFieldLabels[field]; ok {
		return label
	}
	return field + ":"
}

func (p *Portal) newEndpoint(w http.ResponseWriter, r *http.Request, s *session) error {
	return p.renderEndpointForm(w, r, s, http.StatusOK, endpointFormPage{Form: endpointForm{optionsForm: optionsForm{}.withSpareRows()}})
}

func (p *Portal) createEndpoint(w http.ResponseWriter, r *http.Request, s *session) error {
	form := readEndpointForm(r)
	timeout, retry, bad := form.policy()
	if bad != nil {
		return p.renderEndpointForm(w, r, s, http.StatusUnprocessableEntity, formRefused(endpointFormPage{Form: form}, bad))
	}
	var e store.Endpoint
	err := pgx.BeginFunc(r.Context(), p.pool, func(tx pgx.Tx) error {
		var err error
		e, err = p.store.CreateEndpointTx(r.Context(), tx, store.NewEndpoint{
			TenantID:    s.TenantID,
			URL:         form.URL,
			Description: form.Description,
			EventTypes:  form.subscription(),
			Ordering:    form.Ordering,
			Channels:    form.channels(),
			Filter:      form.Filter,
			Headers:     form.headers(),
			Timeout:     timeout,
			RetryPolicy: retry,
		})
		if err != nil {
			return err
		}
		return p.store.SetCredentialsTx(r.Context(), tx, e.ID, form.Credentials.change(false))
	})
	if err != nil {
		data := endpointFormPage{Form: form}
		if refused(err, &data) {
			return p.renderEndpointForm(w, r, s, http.StatusUnprocessableEntity, data)
		}
		if atCap(err, &data) {
			return p.renderEndpointForm(w, r, s, http.StatusConflict, data)
		}
		return err
	}
	redirectDone(w, r, Path+"/endpoints/"+e.ID.String(), "created")
	return nil
}

func (p *Portal) editEndpoint(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := p.loadEndpoint(r.Context(), r, s)
	if err != nil {
		return err
	}
	catalogue, err := p.catalogue(r)
	if err != nil {
		return err
	}
	// The store shows the options as the API does: secret values masked.
	options, err := p.store.GetEndpoint(r.Context(), e.ID)
	if err != nil {
		return err
	}
	form := formFor(e, catalogue)
	form.optionsForm = optionsFormFor(options)
	summary, err := p.credentialsOf(r.Context(), e.ID)
	if err != nil {
		return err
	}
	form.Credentials = credentialsFormFor(summary)
	return p.renderEndpointForm(w, r, s, http.StatusOK, endpointFormPage{ID: e.ID, Form: form})
}

func (p *Portal) updateEndpoint(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := p.loadEndpoint(r.Context(), r, s)
	if err != nil {
		return err
	}
	form := readEndpointForm(r)
	types, channels, headers := form.subscription(), form.channels(), form.headers()
	// A timeout or retry policy the form refuses is answered as the
	// store's refusals are,
	// with the endpoint's current credentials shown.
	if timeout, retry, bad := form.policy(); bad != nil {
		err = bad
	} else {
		err = pgx.BeginFunc(r.Context(), p.pool, func(tx pgx.Tx) error {
			_, err := p.store.UpdateEndpointTx(r.Context(), tx, e.ID, store.EndpointUpdate{URL: &form.URL, Description: &form.Description, EventTypes: &types,
				Channels: &channels, Filter: &form.Filter, Headers: &headers, Timeout: &timeout, RetryPolicy: &retry})
			if err != nil {
				return err
			}
			return p.store.SetCredentialsTx(r.Context(), tx, e.ID, form.Credentials.change(true))
		})
	}
	if err != nil {
		var readErr error
		if form.Credentials.Current, readErr = p.credentialsOf(r.Context(), e.ID); readErr != nil {
			return readErr
		}
		data := endpointFormPage{ID: e.ID, Form: form}
		if refused(err, &data) {
			return p.renderEndpointForm(w, r, s, http.StatusUnprocessableEntity, data)
		}
		return err
	}
	redirectDone(w, r, Path+"/endpoints/"+e.ID.String(), "updated")
	return nil
}

func (p *Portal) enableEndpoint(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := p.loadEndpoint(r.Context(), r, s)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(r.Context(), p.pool, func(tx pgx.Tx) error {
		if _, err := p.store.EnableEndpointTx(r.Context(), tx, e.ID); err != nil {
			return err
		}
		_, err := replay.ResumeTx(r.Context(), tx, p.jobs, e.ID)
		return err
	})
	if err != nil {
		return err
	}
	redirectDone(w, r, Path+"/endpoints/"+e.ID.String(), "enabled")
	return nil
}

func (p *Portal) disableEndpoint(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := p.loadEndpoint(r.Context(), r, s)
	if err != nil {
		return err
	}
	if _, err := p.store.DisableEndpoint(r.Context(), e.ID, disabledInPortal); err != nil {
		return err
	}
	redirectDone(w, r, Path+"/endpoints/"+e.ID.String(), "disabled")
	return nil
}

// confirmDelete asks before deleting: the form on this page is the only way
// to delete.
func (p *Portal) confirmDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := p.loadEndpoint(r.Context(), r, s)
	if err != nil {
		return err
	}
	p.render(w, r, http.StatusOK, "endpoint_delete", s.page("Delete endpoint", "endpoints", struct{ Endpoint endpointView }{e}))
	return nil
}

func (p *Portal) deleteEndpoint(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := p.loadEndpoint(r.Context(), r, s)
	if err != nil {
		return err
	}
	// The endpoint disappears at once; its history is erased in the
	// background (package erasure).
	if _, err := erasure.StartEndpoint(r.Context(), p.pool, p.jobs, s.TenantID, e.ID); err != nil && !errors.Is(err, erasure.ErrNotFound) {
		return err
	}
	redirectDone(w, r, Path+"/endpoints", "deleted")
	return nil
}

// revealSecret shows the endpoint page with its current secret. It is a
// POST, so it carries the CSRF token and the page is never cached.
func (p *Portal) revealSecret(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := p.loadEndpoint(r.Context(), r, s)
	if err != nil {
		return err
	}
	secret, err := p.store.RevealSecret(r.Context(), e.ID)
	if err != nil {
		return err
	}
	return p.showEndpoint(w, r, s, secret.ReceiverKey().String(), "")
}

func (p *Portal) rotateSecret(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := p.loadEndpoint(r.Context(), r, s)
	if err != nil {
		return err
	}
	grace, err := time.ParseDuration(r.PostFormValue("grace"))
	if err != nil || grace <= 0 || grace > store.MaxRotationGrace {
		return badRequest("Choose how long the current secret stays valid from the list (up to 7 days).")
	}
	secret, err := p.store.RotateSecret(r.Context(), e.ID, grace)
	if err != nil {
		return err
	}
	return p.showEndpoint(w, r, s, secret.ReceiverKey().String(), flashes["rotated"])
}
