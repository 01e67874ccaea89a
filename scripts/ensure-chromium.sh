#!/usr/bin/env bash
# The portal's browser tests drive Debian's chromium (headless). Installs it
# when it is missing, so `make test` works on a fresh machine.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
echo "chromium is missing; installing it for the portal's browser tests"
if [ "$(id -u)" -ne 0 ]; then
	echo "run as root, or install it yourself: apt-get update && apt-get install -y chromium" >&2
	exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
