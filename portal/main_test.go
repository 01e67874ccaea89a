package portal_test

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopBrowser()
	os.Exit(code)
}
