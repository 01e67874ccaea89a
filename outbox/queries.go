package outbox

// tryPublishMany is the whole publish operation, for one event or many
// (migrations/0019_publish_many.sql, with the producer's traceparent since
// 0020_trace_context.sql and the messages' channels, a JSON array of
// arrays or NULL, since 0034_channels_and_filters.sql). It reports bad input in
// problem_field and problem rather than raising, so the producer's
// transaction stays usable, and publishes nothing when it does.
const tryPublishMany = `SELECT item_index, message_id, version, duplicate, created_at, body, problem_field, problem
FROM herald.try_publish_many($1, $2, $3, $4, $5, $6, $7::jsonb)`
