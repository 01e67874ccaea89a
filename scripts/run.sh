#!/usr/bin/env bash
# make run: Herald for development on this machine. Starts Postgres when it
# is down, then the api, the dispatcher and the demo (a receiver, a demo
# tenant and endpoint, a few events), and prints the API URL, a development
# API key and a portal link. Ctrl-C stops everything.
#
# Development secrets are generated once into tmp/ (git-ignored) and reused,
# so endpoint secrets stay readable and the API key stays the same across
# runs. Every setting can be overridden from the environment; the defaults
# below are also what docker-compose.yml uses.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p tmp

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null && command -v pg_ctlcluster >/dev/null; then
	echo "make run: Postgres is down; starting it"
	pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
	for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi

# generated FILE COMMAND: FILE's content, made by COMMAND the first time.
generated() {
	if [ ! -s "$1" ]; then
		( umask 077; eval "$2" > "$1" )
		echo "make run: generated a development value in $1 (not for production)" >&2
	fi
	cat "$1"
}
random_base64() { head -c "$1" /dev/urandom | base64 | tr -d '\n'; }

export HERALD_SECRET_KEY="${HERALD_SECRET_KEY:-$(generated tmp/dev-secret-key 'random_base64 32')}"
export HERALD_BOOTSTRAP_API_KEY="${HERALD_BOOTSTRAP_API_KEY:-$(generated tmp/dev-api-key 'echo "hk_dev_$(random_base64 32 | tr "+/" "-_" | tr -d "=")"')}"
export HERALD_ALLOW_CIDRS="${HERALD_ALLOW_CIDRS:-127.0.0.0/8,::1/128}"
export HERALD_API_ADDR="${HERALD_API_ADDR:-127.0.0.1:8080}"
export HERALD_PUBLIC_URL="${HERALD_PUBLIC_URL:-http://$HERALD_API_ADDR}"

pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop EXIT INT TERM

./bin/api & pids+=($!)
api=$!
./bin/dispatcher & pids+=($!)
./bin/demo & pids+=($!)
demo=$!

# The api and the demo receiver are what a person uses; when either stops,
# stop the rest.
wait -n "$api" "$demo"
