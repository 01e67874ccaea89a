package testfactory

const insertTenant = `
INSERT INTO herald.tenants (id, name) VALUES ($1, $2)
RETURNING id, name, created_at`

const insertEndpoint = `
INSERT INTO herald.endpoints (id, tenant_id, url, description, event_types)
VALUES ($1, $2, $3, $4, $5)
RETURNING id, tenant_id, url, description, event_types, enabled, created_at`

const insertMessage = `
INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, created_at, dispatched_at)
VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, now()), $8)
RETURNING id, tenant_id, event_type, object_id, object_version, body, created_at, dispatched_at`

// insertDelivery takes the tenant from the endpoint, as the fan-out does.
const insertDelivery = `
INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id, status, first_attempt_at, completed_at, created_at)
SELECT $1, $2, e.id, e.tenant_id, $4, $5, $6, coalesce($7, now()) FROM herald.endpoints e WHERE e.id = $3
RETURNING id, message_id, endpoint_id, tenant_id, status, first_attempt_at, completed_at, created_at`

const selectEndpointTenant = `SELECT tenant_id FROM herald.endpoints WHERE id = $1`
