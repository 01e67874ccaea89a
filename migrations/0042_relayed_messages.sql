-- Split mode (issue 23): messages may come from a producer's database
-- through the dispatcher's relay (package relay) rather than from a
-- publish here. source names the --source-database-url a message was
-- relayed from; NULL for a message published in this database. Postgres
-- adds the column without rewriting the partitions (no default).
ALTER TABLE herald.messages ADD COLUMN source text;
