package outbox

// tryPublish is the whole publish operation (migrations/0003_outbox.sql,
// with the producer's traceparent since 0020_trace_context.sql). It
// reports bad input in problem_field and problem rather than raising, so the
// producer's transaction stays usable.
const tryPublish = `SELECT message_id, version, duplicate, problem_field, problem
FROM herald.try_publish($1, $2, $3, $4, $5, $6)`
