package main

import (
	"context"

	"github.com/heraldhq/herald/harness/sim"
	"github.com/heraldhq/herald/internal/scratchdb"
)

// newDatabase gives sim.Run its databases: empty ones on srv named
// prefix+name, each replacing any database an interrupted run left under
// that name.
func newDatabase(srv *scratchdb.Server, prefix string) sim.NewDatabase {
	return func(ctx context.Context, name string) (string, error) {
		return srv.Create(ctx, prefix+name, nil)
	}
}
