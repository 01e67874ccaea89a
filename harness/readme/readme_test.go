package readme_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/harness/readme"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
)

// notRun are the sh blocks the test leaves alone, by a command each holds,
// with the reason. Every entry must match a block, so the list cannot go
// stale.
var notRun = map[string]string{
	"make run":                "starts Herald in the foreground; the test starts its own api and dispatcher",
	"go run ./cmd/api":        "starts the api in the foreground; the test starts its own",
	"go run ./cmd/dispatcher": "starts a dispatcher in the foreground; split mode is tested by relay/ and cmd/dispatcher",
	"docker compose up":       "needs Docker",
	"make sim":                "a proof of minutes, run by its own target",
	"make bench":              "a proof of minutes, run by its own target",
	"make chaos":              "restarts the Postgres cluster, run by its own target",
	"make soak":               "a proof of minutes, run by its own target",
}

// programs are built once, into bin.
var (
	programs = []string{"api", "dispatcher", "herald"}
	bin      string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-readme-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	// One go build for all three shares their packages' compilation.
	args := []string{"build", "-o", bin + string(os.PathSeparator)}
	for _, p := range programs {
		args = append(args, "../../cmd/"+p)
	}
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build %v: %v\n", programs, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// bootstrapKey is the operator key the api creates on start, as make run's.
const bootstrapKey = "hk_dev_0123456789abcdef0123456789abcdef0123456789abcdef"

// freeAddr returns a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// start runs one of the programs until the test ends.
func start(t *testing.T, program string, env []string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, program))
	cmd.Env = append(os.Environ(), env...)
	logs, err := os.Create(filepath.Join(t.TempDir(), program+".log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			raw, _ := os.ReadFile(logs.Name())
			t.Logf("%s's log:\n%s", program, raw)
		}
	})
}

func TestREADMEShellBlocks(t *testing.T) {
	t.Parallel()
	markdown, err := os.ReadFile("../../README.md")
	require.NoError(t, err)

	addr := freeAddr(t)
	env := []string{
		"HERALD_DATABASE_URL=" + pgtest.NewDatabase(t, pgtest.Herald),
		"HERALD_MIGRATE=false",
		"HERALD_SECRET_KEY=" + secretbox.Generate(),
		"HERALD_ALLOW_CIDRS=127.0.0.0/8,::1/128",
	}
	start(t, "api", append(env, "HERALD_API_ADDR="+addr, "HERALD_BOOTSTRAP_API_KEY="+bootstrapKey, "HERALD_PUBLIC_URL=http://"+addr))
	start(t, "dispatcher", append(env, "HERALD_POLL_INTERVAL=100ms", "HERALD_DELIVERY_TIMEOUT=2s"))
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "the api answers /readyz")

	// The blocks share one shell's variables, as a reader pasting them
	// into one terminal would: each block starts from the variables and
	// functions the previous one left. curl fails on an HTTP error status,
	// so an answer of 4xx or 5xx fails its block.
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	require.NoError(t, os.WriteFile(state, nil, 0o600))
	prelude := `curl() { command curl --fail-with-body -S "$@"; }
set -euo pipefail
`
	matched := map[string]bool{}
	ran := 0
blocks:
	for _, b := range readme.Blocks(markdown) {
		if b.Lang != "sh" {
			continue
		}
		for command, why := range notRun {
			if strings.Contains(b.Text, command) {
				matched[command] = true
				t.Logf("README.md:%d not run: %s", b.Line, why)
				continue blocks
			}
		}
		script := fmt.Sprintf("source %q\n%s%s\n{ declare -p; declare -f; } 2>/dev/null | grep -Ev '^declare -[a-zA-Z]*r|^declare -[a-zA-Z-]* (BASH|FUNCNAME|GROUPS|PIPESTATUS|SHELLOPTS|DIRSTACK|EUID|PPID|UID)' > %q\n",
			state, prelude, b.Text, state)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"HERALD_API_URL=http://"+addr,
			"HERALD_API_KEY="+bootstrapKey,
		)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			first, _, _ := strings.Cut(strings.TrimSpace(b.Text), "\n")
			t.Fatalf("README.md:%d, the sh block starting %q, failed (%v); its output:\n%s", b.Line, first, err, out)
		}
		ran++
	}
	for command := range notRun {
		require.True(t, matched[command], "no README block holds %q any more; remove it from notRun", command)
	}
	require.Positive(t, ran, "the README has sh blocks to run")
}
