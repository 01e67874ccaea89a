package browsertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// installCommand is what scripts/ensure-chromium.sh runs as root, and
// tells a person to run when it cannot.
const installCommand = "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium"

// ensureChromium runs scripts/ensure-chromium.sh with PATH holding only
// dir (the fakes a case gives it) and the real sh and tail.
func ensureChromium(t *testing.T, fakes map[string]string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range []string{"sh", "tail"} {
		real, err := exec.LookPath(tool)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(real, filepath.Join(dir, tool)))
	}
	for name, body := range fakes {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	cmd := exec.Command(bash, "../../scripts/ensure-chromium.sh")
	cmd.Env = []string{"PATH=" + dir, "FAKES=" + dir}
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}

// make test's first step installs chromium where it can and otherwise
// stops at once with the one command to run.
func TestEnsureChromium(t *testing.T) {
	t.Parallel()
	t.Run("present", func(t *testing.T) {
		out, code := ensureChromium(t, map[string]string{"chromium": "exit 0"})
		require.Equal(t, 0, code, out)
		require.Empty(t, out)
	})
	t.Run("installed as root", func(t *testing.T) {
		out, code := ensureChromium(t, map[string]string{
			"id":      "echo 0",
			"apt-get": `[ "$1" = install ] && printf '#!/bin/sh\n' > "$FAKES/chromium" && chmod +x "$FAKES/chromium"; exit 0`,
		})
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "installing Debian's package")
	})
	t.Run("no apt-get", func(t *testing.T) {
		out, code := ensureChromium(t, map[string]string{"id": "echo 0"})
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "this machine has no apt-get")
	})
	t.Run("not root, no sudo", func(t *testing.T) {
		out, code := ensureChromium(t, map[string]string{"id": "echo 1000", "apt-get": "exit 0"})
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "installing it needs root")
		require.Contains(t, out, "sudo sh -c '"+installCommand+"'")
	})
	t.Run("apt-get fails", func(t *testing.T) {
		out, code := ensureChromium(t, map[string]string{"id": "echo 0", "apt-get": "echo 'E: Unable to locate package chromium'; exit 100"})
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "E: Unable to locate package chromium", "apt-get's own words")
		require.Contains(t, out, "sudo sh -c '"+installCommand+"'")
	})
}
