package portal_test

import (
	"os"
	"testing"

	"github.com/heraldhq/herald/internal/browsertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	browsertest.Stop()
	os.Exit(code)
}
