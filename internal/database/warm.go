package database

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// warmHistory plans a read of each table partitioned by time, which loads
// the session's catalog entries of every partition and its indexes. A
// database without Herald's schema yet is left alone: migrations.Check
// says what it lacks.
const warmHistory = `DO $warm$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['messages', 'deliveries', 'attempts', 'replay_deliveries'] LOOP
        IF to_regclass('herald.' || t) IS NOT NULL THEN
            EXECUTE format('EXPLAIN SELECT * FROM herald.%I', t);
        END IF;
    END LOOP;
END
$warm$`

// WarmHistory is an AfterConnect hook (Options.AfterConnect) that readies
// a new connection for reading history. A session's first statement on a
// table partitioned by time loads the catalog entries of all its
// partitions and their indexes: on 35 partitions (30 days' retention),
// 60 to 100 ms for messages, deliveries and attempts on an idle machine, against
// about 3 ms to plan the same statement after. WarmHistory pays that as
// the connection is made, so that with Options.MinConns the pool's
// standing connections have paid it before any request needs them.
func WarmHistory(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, warmHistory); err != nil {
		return fmt.Errorf("warm a new connection's catalog of the history partitions: %w", err)
	}
	return nil
}
