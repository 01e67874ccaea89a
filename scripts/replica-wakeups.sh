#!/usr/bin/env bash
# replica-wakeups.sh DISPATCHER REPLICAS [SECONDS] [RATE]: the transactions
# REPLICAS copies of DISPATCHER (a bin/dispatcher) commit, idle or under a
# trickle of publishes. Starts them on a fresh database herald_wakeups,
# waits 15 s for them to settle, then for SECONDS (default 30) publishes
# RATE events a second (default 0: idle) through pgbench, one
# herald.publish per transaction, for a tenant without endpoints (so the
# fan-out claims and nothing is delivered), and reads pg_stat_database's
# xact_commit and xact_rollback before and after (a fan-out transaction
# that claimed nothing rolls back), and the scans of the outbox's
# undispatched index (messages_undispatched_tenant's partitions: every
# claim, empty or not, probes it a fixed number of times, and nothing else
# does). It prints
# the database's transactions a second, commits less pgbench's own and
# rollbacks, those index scans a second, and the connections each
# application_name held at the end. Postgres must run on 127.0.0.1:5432 with pgbench installed.
set -euo pipefail
bin=${1:?usage: replica-wakeups.sh path/to/dispatcher replicas [seconds] [rate]}
replicas=${2:?usage: replica-wakeups.sh path/to/dispatcher replicas [seconds] [rate]}
secs=${3:-30}
rate=${4:-0}
db=herald_wakeups
psql() { command psql -h 127.0.0.1 -U postgres -qtAX "$@"; }
psql -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
export HERALD_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db?sslmode=disable"
export HERALD_SECRET_KEY=$(head -c 32 /dev/urandom | base64)
logs=$(mktemp -d)
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	psql -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
	rm -rf "$logs"
}
trap cleanup EXIT
# The first migrates; the others start once the schema is there.
"$bin" >"$logs/0.log" 2>&1 &
pids+=($!)
until psql -d "$db" -c "SELECT 1 FROM herald.tenants LIMIT 1" >/dev/null 2>&1; do sleep 0.2; done
for i in $(seq 2 "$replicas"); do
	"$bin" >"$logs/$i.log" 2>&1 &
	pids+=($!)
done
psql -d "$db" -c "INSERT INTO herald.tenants (id) VALUES ('wakeups') ON CONFLICT DO NOTHING"
sleep 15
commits() { psql -c "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'"; }
rollbacks() { psql -c "SELECT xact_rollback FROM pg_stat_database WHERE datname = '$db'"; }
scans() { psql -d "$db" -c "SELECT coalesce(sum(s.idx_scan), 0) FROM pg_stat_user_indexes s, pg_partition_tree('herald.messages_undispatched_tenant') t WHERE s.indexrelid = t.relid"; }
c0=$(commits)
r0=$(rollbacks)
s0=$(scans)
if [ "$rate" -gt 0 ]; then
	script="$logs/publish.sql"
	printf '%s\n' '\set n random(1, 1000000000)' \
		"SELECT herald.publish('wakeups', 'invoice.paid', 'inv_' || :n, '{}');" >"$script"
	pgbench -h 127.0.0.1 -U postgres -n -c 2 -R "$rate" -T "$secs" -f "$script" "$db" >"$logs/pgbench.log" 2>&1
	published=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$logs/pgbench.log")
else
	sleep "$secs"
	published=0
fi
c1=$(commits)
r1=$(rollbacks)
s1=$(scans)
awk -v c=$((c1 - c0)) -v b=$((r1 - r0)) -v x=$((s1 - s0)) -v p="$published" -v s="$secs" -v n="$replicas" -v r="$rate" 'BEGIN {
  printf "%d dispatchers, %d publishes/s, over %d s: %.1f transactions/s besides the %d publishes (%.1f commits/s, %.1f rollbacks/s; %.1f per dispatcher); %.1f scans/s of the undispatched index\n",
    n, r, s, (c - p + b)/s, p, (c - p)/s, b/s, (c - p + b)/s/n, x/s }'
psql -c "SELECT coalesce(nullif(application_name, ''), '(none)') || ': ' || count(*) FROM pg_stat_activity WHERE datname = '$db' AND pid <> pg_backend_pid() GROUP BY application_name ORDER BY 1"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
