package main

import (
	"context"

	"github.com/heraldhq/herald/internal/scratchdb"
)

// newDatabase creates a database named chaos_<name>_<random> on srv and
// returns its URL; unless migrate is nil, it is migrated.
func newDatabase(ctx context.Context, srv *scratchdb.Server, name string, migrate scratchdb.Migrate) (string, error) {
	return srv.Create(ctx, scratchdb.UniqueName("chaos_"+name+"_"), migrate)
}
