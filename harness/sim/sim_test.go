package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/heraldhq/herald/internal/pgtest"
)

// template is a database with the receiver module's and the simulation's
// tables, cloned for every test database; openFresh migrates again, which
// brings a clone of an older template up to date.
var template = pgtest.Template{Name: "sim", Fingerprint: fingerprint(), Migrate: Migrate}

func fingerprint() string {
	sum := sha256.Sum256([]byte(createTables))
	return hex.EncodeToString(sum[:6])
}

type testBundle struct {
	cfg   Config
	newDB NewDatabase
}

// setup gives a test the small configuration and fresh, empty databases
// that are dropped when it ends.
func setup(t *testing.T) testBundle {
	t.Helper()
	return testBundle{
		cfg: Small(),
		newDB: func(ctx context.Context, name string) (string, error) {
			return pgtest.NewDatabase(t, template), nil
		},
	}
}
