package relay

import (
	"context"

	"github.com/google/uuid"
)

// SetAfterHeraldCommit makes the relay built from cfg run f after
// Herald's commit and before the source's mark; an error from f abandons
// the step there, as a crash would.
func SetAfterHeraldCommit(cfg *Config, f func(source string, ids []uuid.UUID) error) {
	cfg.afterHeraldCommit = f
}

// Prune runs a retention pass on the source named name now.
func (r *Relay) Prune(ctx context.Context, name string) error {
	for _, s := range r.sources {
		if s.Name == name {
			return r.prune(ctx, s)
		}
	}
	panic("relay: no source " + name)
}
