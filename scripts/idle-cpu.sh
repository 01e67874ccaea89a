#!/usr/bin/env bash
# idle-cpu.sh DISPATCHER [SECONDS]: the CPU an idle dispatcher and its
# Postgres backends use. Starts DISPATCHER (a bin/dispatcher) on a fresh
# database herald_idle_cpu, waits 10 s for it to settle, then reads
# utime+stime from /proc/<pid>/stat of the dispatcher and of every backend
# connected to that database, SECONDS (default 60) apart, and prints the
# share of one core each used. Postgres must run on this machine.
set -euo pipefail
bin=${1:?usage: idle-cpu.sh path/to/dispatcher [seconds]}
secs=${2:-60}
db=herald_idle_cpu
psql() { command psql -h 127.0.0.1 -U postgres -qtAX "$@"; }
psql -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
export HERALD_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db"
export HERALD_SECRET_KEY=$(head -c 32 /dev/urandom | base64)
"$bin" >/tmp/idle-cpu-dispatcher.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; psql -c "DROP DATABASE IF EXISTS '$db' WITH (FORCE)"' EXIT
sleep 10
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
backends=$(psql -d "$db" -c "SELECT pid FROM pg_stat_activity WHERE datname = '$db' AND pid <> pg_backend_pid()")
d0=$(ticks $pid); b0=0; for b in $backends; do b0=$((b0 + $(ticks $b))); done
sleep "$secs"
d1=$(ticks $pid); b1=0; for b in $backends; do b1=$((b1 + $(ticks $b))); done
hz=$(getconf CLK_TCK)
awk -v d=$((d1 - d0)) -v b=$((b1 - b0)) -v s="$secs" -v hz="$hz" -v n="$(echo $backends | wc -w)" 'BEGIN {
  printf "over %d s: dispatcher %.2f CPU s (%.2f%% of a core), its %d Postgres backends %.2f CPU s (%.2f%%), together %.2f%% of a core\n",
    s, d/hz, 100*d/hz/s, n, b/hz, 100*b/hz/s, 100*(d+b)/hz/s }'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
