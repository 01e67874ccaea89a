// Package programtest runs a program's tests against the program itself:
// it builds the package under test into a temporary binary once per test
// run, so a test starts it as a deployment would, with flags and an
// environment of its own.
package programtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main builds the package in the current directory as name, stores the
// binary's path in *binary, runs the tests and exits with their code. Call
// it from TestMain.
func Main(m *testing.M, name string, binary *string) {
	dir, err := os.MkdirTemp("", "herald-"+name+"-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*binary = filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", *binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build the %s: %v\n", name, err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
