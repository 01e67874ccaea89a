package delivery

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Warm plans, on conn, the statements whose plan a connection keeps once it
// has made it (planOnce): the load and the recording of a batch. It runs
// them for no deliveries, in a transaction it rolls back.
//
// Their generic plans cover every partition of deliveries and messages, and
// making them is most of what a connection's first load and first recording
// cost: 68 to 80 ms for the load alone on 35 partitions (a 30-day
// retention), against 16 ms on the 5 of a new installation. A dispatcher
// that starts under load pays that on each of its connections in its first
// seconds, when every job waits for the first loads; the dispatcher warms
// its connections before it takes jobs (dispatcher.Dispatcher.Run).
func (w *Worker) Warm(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("warm a connection: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var batch pgx.Batch
	queueLoad(&batch, []uuid.UUID{}, w.now())
	queueRecordings(&batch, []recordRow{})
	if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
		return fmt.Errorf("warm a connection: %w", err)
	}
	return nil
}
