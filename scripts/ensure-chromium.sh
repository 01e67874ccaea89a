#!/usr/bin/env bash
# The portal's browser tests drive Debian's chromium (headless). Installs it
# when it is missing, so `make test` works on a fresh machine; where it
# cannot install it, it fails at once with the one command to run.
set -uo pipefail
command -v chromium >/dev/null 2>&1 && exit 0

install="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium"
cannot() {
	echo "chromium is missing and $1. Run this, then make test again:" >&2
	echo "    $2" >&2
	exit 1
}

command -v apt-get >/dev/null 2>&1 ||
	cannot "this machine has no apt-get" "install chromium with your package manager, so that 'chromium' is on PATH"
if [ "$(id -u)" -eq 0 ]; then
	as_root=(sh -c "$install")
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	as_root=(sudo sh -c "$install")
else
	cannot "installing it needs root" "sudo sh -c '$install'"
fi

echo "chromium is missing; installing Debian's package for the portal's browser tests"
if ! out=$("${as_root[@]}" 2>&1) || ! command -v chromium >/dev/null 2>&1; then
	printf '%s\n' "$out" | tail -n 5 >&2
	cannot "apt-get could not install it (above)" "sudo sh -c '$install'"
fi
