// Package version reports which build of Herald is running.
package version

import "runtime/debug"

// String returns the main module's version as the Go toolchain stamped it
// into the binary: a release tag ("v1.2.0") or, for a build from a Git
// checkout, a pseudo-version naming the commit. It returns "dev" when the
// binary carries none (go run, go test).
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Version == "" || info.Main.Version == "(devel)" {
		return "dev"
	}
	return info.Main.Version
}
