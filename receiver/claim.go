package receiver

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Claim takes the dedupe key (source, webhookID) inside tx, the transaction
// of the side effect, for consumers that apply a webhook's effect in the
// request instead of through the Handler and a Worker. first is true for
// the first copy of a webhook: apply the effect in tx and commit. It is
// false when another transaction already claimed it: do nothing and answer
// 200, since that copy is (or is being) handled.
//
// The key is a row under a unique constraint, so two copies arriving at the
// same moment cannot both see first == true: the second insert waits for
// the first transaction and then conflicts (or, if the first rolled back,
// claims the key itself). Because key and effect commit together, a crash
// before commit loses neither. A check-then-insert (SELECT, then INSERT)
// has no such guarantee. Never claim in one transaction and apply in
// another: a crash between the two would lose the event for good.
//
// Keys are kept for the retention of Prune. webhookID is the webhook-id
// header, not the signature or timestamp, which change on every retry.
func Claim(ctx context.Context, tx pgx.Tx, source, webhookID string) (first bool, err error) {
	if source == "" || webhookID == "" {
		return false, errors.New("claim: source and webhook ID must not be empty")
	}
	tag, err := tx.Exec(ctx, insertClaim, source, webhookID)
	if err != nil {
		return false, fmt.Errorf("claim %s/%s: %w", source, webhookID, err)
	}
	return tag.RowsAffected() == 1, nil
}
