-- Recording an attempt updates its delivery in place.
--
-- Every delivery is updated at least once (its first attempt). An update
-- that changes no indexed column, and finds room on the row's own page, is a
-- heap-only tuple (HOT) update: Postgres writes no new index entries. The
-- partial index deliveries_pending made every status change a non-HOT
-- update, four index insertions each (its own, the primary key, the
-- (message, endpoint) key and the endpoint's timeline). Its one reader is
-- disabling an endpoint, which cancels the endpoint's pending deliveries:
-- that now walks the endpoint's deliveries through
-- deliveries_endpoint_created, once per disabled endpoint.
--
-- fillfactor 50 leaves room on each page for every row inserted there to be
-- updated once in place; page pruning frees the older versions of rows
-- updated again (retries).
DROP INDEX herald.deliveries_pending;
ALTER TABLE herald.deliveries SET (fillfactor = 50);
