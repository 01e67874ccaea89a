package api_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/erasure"
	"github.com/heraldhq/herald/internal/testfactory"
)

type erasureView struct {
	ID          uuid.UUID  `json:"id"`
	Kind        string     `json:"kind"`
	TenantID    string     `json:"tenant_id"`
	EndpointID  *uuid.UUID `json:"endpoint_id"`
	Status      string     `json:"status"`
	RowsDeleted int64      `json:"rows_deleted"`
	StartedAt   string     `json:"started_at"`
	CompletedAt *string    `json:"completed_at"`
}

// erasure decodes a DELETE's answer, checking its status and Location.
func (r response) erasure(t *testing.T, status int) erasureView {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
	var e erasureView
	r.Decode(t, &e)
	require.Equal(t, "/v1/erasures/"+e.ID.String(), r.Header.Get("Location"))
	return e
}

// erase works the erasure to its end, as a dispatcher would.
func (b *testBundle) erase(t *testing.T, id uuid.UUID) {
	t.Helper()
	require.NoError(t, erasure.NewWorker(b.pool, 0, nil).Work(b.ctx, &river.Job[erasure.Args]{Args: erasure.Args{ErasureID: id}}))
}

func TestDeleteEndpointErasesInTheBackground(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	kept := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/kept"})
	message := testfactory.Message(t, b.pool, &testfactory.MessageOpts{TenantID: "acme"})
	for _, id := range []string{e.ID, kept.ID} {
		testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: message.ID, EndpointID: uuid.MustParse(id)})
	}
	path := "/v1/tenants/acme/endpoints/" + e.ID

	b.do(t, b.globex, "DELETE", path, nil).Problem(t, http.StatusNotFound)
	b.do(t, b.globex, "DELETE", "/v1/tenants/globex/endpoints/"+e.ID, nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "DELETE", "/v1/tenants/acme/endpoints/"+uuid.NewString(), nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "DELETE", "/v1/tenants/acme/endpoints/nope", nil).Problem(t, http.StatusNotFound)

	started := b.do(t, b.acme, "DELETE", path, nil).erasure(t, http.StatusAccepted)
	require.Equal(t, "endpoint", started.Kind)
	require.Equal(t, "running", started.Status)
	require.Equal(t, "acme", started.TenantID)
	require.Equal(t, e.ID, started.EndpointID.String())
	require.Nil(t, started.CompletedAt)

	b.do(t, b.acme, "GET", path, nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "PATCH", path, map[string]any{"description": "x"}).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "POST", path+"/enable", nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "GET", path+"/secret", nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "POST", path+"/replays", map[string]any{"since": "2026-01-01T00:00:00Z"}).Problem(t, http.StatusNotFound)
	var list struct {
		Data []endpointView `json:"data"`
	}
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints", nil).Decode(t, &list)
	require.Len(t, list.Data, 1, "a deleted endpoint leaves the list at once")
	require.Equal(t, kept.ID, list.Data[0].ID)
	require.Equal(t, 1, int(b.do(t, b.acme, "GET", "/v1/tenants/acme", nil).JSON(t)["endpoint_count"].(float64)))

	again := b.do(t, b.acme, "DELETE", path, nil).erasure(t, http.StatusAccepted)
	require.Equal(t, started.ID, again.ID, "a second DELETE answers with the same erasure")

	erasurePath := "/v1/erasures/" + started.ID.String()
	var got erasureView
	b.do(t, b.acme, "GET", erasurePath, nil).Decode(t, &got)
	require.Equal(t, started.ID, got.ID)
	require.Equal(t, http.StatusOK, b.do(t, b.operator, "GET", erasurePath, nil).Status, "an operator sees every erasure")
	b.do(t, b.globex, "GET", erasurePath, nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "GET", "/v1/erasures/"+uuid.NewString(), nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "GET", "/v1/erasures/nope", nil).Problem(t, http.StatusNotFound)

	b.erase(t, started.ID)
	b.do(t, b.acme, "GET", erasurePath, nil).Decode(t, &got)
	require.Equal(t, "completed", got.Status)
	require.NotNil(t, got.CompletedAt)
	require.Equal(t, int64(1), got.RowsDeleted, "its one delivery")
	done := b.do(t, b.acme, "DELETE", path, nil).erasure(t, http.StatusOK)
	require.Equal(t, got, done, "a DELETE after the erasure answers 200 with it")
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+kept.ID, nil).JSON(t)
}

func TestDeleteTenantErasesInTheBackground(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createEndpoint(t, b.globex, "globex", map[string]any{"url": "https://example.com/hook"})
	resp := b.do(t, b.globex, "POST", "/v1/tenants/globex/messages", map[string]any{"event_type": "invoice.paid", "object_id": "inv_1", "data": map[string]any{}})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)

	p := b.do(t, b.globex, "DELETE", "/v1/tenants/globex", nil).Problem(t, http.StatusForbidden)
	require.Contains(t, p.Detail, "operator")
	b.do(t, b.acme, "DELETE", "/v1/tenants/globex", nil).Problem(t, http.StatusNotFound)
	b.do(t, b.operator, "DELETE", "/v1/tenants/nobody", nil).Problem(t, http.StatusNotFound)
	b.do(t, b.operator, "DELETE", "/v1/tenants/bad%20id", nil).Problem(t, http.StatusNotFound)

	started := b.do(t, b.operator, "DELETE", "/v1/tenants/globex", nil).erasure(t, http.StatusAccepted)
	require.Equal(t, "tenant", started.Kind)
	require.Nil(t, started.EndpointID)
	require.Equal(t, "running", started.Status)

	b.do(t, b.operator, "GET", "/v1/tenants/globex", nil).Problem(t, http.StatusNotFound)
	b.do(t, b.operator, "POST", "/v1/tenants/globex/messages", map[string]any{"event_type": "invoice.paid", "object_id": "inv_2", "data": map[string]any{}}).
		Problem(t, http.StatusNotFound)
	b.do(t, b.globex, "GET", "/v1/tenants/globex/messages", nil).Problem(t, http.StatusUnauthorized)
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	b.do(t, b.operator, "GET", "/v1/tenants", nil).Decode(t, &list)
	for _, tenant := range list.Data {
		require.NotEqual(t, "globex", tenant.ID, "a deleted tenant leaves the list at once")
	}
	p = b.do(t, b.operator, "POST", "/v1/tenants", map[string]string{"id": "globex"}).Problem(t, http.StatusConflict)
	require.Contains(t, p.Detail, "being erased")

	again := b.do(t, b.operator, "DELETE", "/v1/tenants/globex", nil).erasure(t, http.StatusAccepted)
	require.Equal(t, started.ID, again.ID)
	b.do(t, b.acme, "GET", "/v1/erasures/"+started.ID.String(), nil).Problem(t, http.StatusNotFound)

	b.erase(t, started.ID)
	var got erasureView
	b.do(t, b.operator, "GET", "/v1/erasures/"+started.ID.String(), nil).Decode(t, &got)
	require.Equal(t, "completed", got.Status)
	require.Equal(t, int64(2), got.RowsDeleted, "its message and its object's version (no dispatcher fanned it out)")
	require.Equal(t, got, b.do(t, b.operator, "DELETE", "/v1/tenants/globex", nil).erasure(t, http.StatusOK))
	require.Equal(t, http.StatusCreated, b.do(t, b.operator, "POST", "/v1/tenants", map[string]string{"id": "globex"}).Status,
		"the id is free once the erasure completed")
}
