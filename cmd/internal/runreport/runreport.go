// Package runreport writes the report of a harness run (make chaos, make
// soak) where people and the docs read it.
package runreport

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FileName is the name of the report's copy in the --out directory, the
// one the docs quote (docs/chaos/output.txt, docs/soak/output.txt).
const FileName = "output.txt"

// Write writes text to stdout and, when dir is not empty, to dir/FileName,
// creating dir. flag names the option that gave dir, for errors.
func Write(stdout io.Writer, text []byte, dir, flag string) error {
	if _, err := stdout.Write(text); err != nil {
		return err
	}
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s %s: %w", flag, dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), text, 0o644); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// Conclude ends a run whose report is written: when it found problems it
// names logDir, where the dispatchers' logs stay, on stderr and reports
// failed; otherwise it removes logDir unless keep (the caller asked for
// the logs with --log-dir).
func Conclude(stderr io.Writer, program string, problems int, logDir string, keep bool) (failed bool, err error) {
	if problems > 0 {
		fmt.Fprintf(stderr, "%s: dispatcher logs in %s\n", program, logDir)
		return true, nil
	}
	if keep {
		return false, nil
	}
	return false, os.RemoveAll(logDir)
}
