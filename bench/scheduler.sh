#!/usr/bin/env bash
# Scheduler benchmark (issue 7 "Performance"; not part of CI).
#   bench/scheduler.sh postgres://postgres@127.0.0.1:5432/apidrift_sched_bench [N] [RATE] [SECONDS]
# N endpoints (default 100000) with schedules whose period is N/RATE seconds (RATE default 280
# checks/s, one million hourly endpoints' rate), first runs spread uniformly over one period,
# against a loopback upstream, on WORKERS (default 1) `serve --role worker` processes sharing
# the database. First measures the same-run ceiling (wrk against the upstream alone, before
# anything is seeded), seeds endpoints and schedules with SQL, runs SECONDS (default 120), then
# prints: runs and claims/s, the worker's fetches per second against that ceiling, the workers' CPU per claim, peak RSS, and each worker's scheduler lag (due
# time -> start) p50/p99/max per 10 s window from its log. For scaling, offer more than one
# worker can take (e.g. RATE 1500) and compare WORKERS=1 with WORKERS=2.
# BIN=path/to/apidrift (default target/release/apidrift, else target/debug/apidrift).
#
# The workers run at the defaults (`worker.concurrency` 64, `baseline.first_samples` 3 a second
# apart) unless CONCURRENCY or APIDRIFT_BASELINE__FIRST_SAMPLES say otherwise. With N/RATE longer
# than SECONDS (the default 100000 at 280/s: a period of 357 s) every run is a new endpoint's first
# run: a baseline captured from three samples, the run waiting outside its slot between them
# (issue 29). A shorter period adds the checks of the second and later runs.
#
# STATEMENTS=1 also counts the database's work per run: pg_stat_statements (created in the bench
# database, reset for that database only after seeding) and the transactions committed
# (pg_stat_database.xact_commit), printed as calls per run, with the statements that make them.
set -euo pipefail
cd "$(dirname "$0")/.."
url=${1:?a PostgreSQL URL whose database may be dropped and recreated}
n=${2:-100000}
rate=${3:-280}
seconds=${4:-120}
bin=${BIN:-}
if [[ -z "$bin" ]]; then
  if [[ -x target/release/apidrift ]]; then bin=target/release/apidrift; else bin=target/debug/apidrift; fi
fi
period_ms=$(( n * 1000 / rate ))
admin_url=${url%/*}/postgres
db=${url##*/}
psql "$admin_url" -qc "DROP DATABASE IF EXISTS $db" -qc "CREATE DATABASE $db" >/dev/null
export ENDPOINT_SECRET_KEY=$("$bin" keygen | tail -1)
"$bin" migrate --database-url "$url" >/dev/null
ws=$("$bin" workspace create --name bench --database-url "$url" | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/upstream.py" <<'PY'
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        b = b'{"id":1,"name":"x","items":[1,2,3],"ok":true}'
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(b))); self.send_header("connection", "close")
        self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True; request_queue_size = 1024
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
port=18099
python3 "$work/upstream.py" $port &
sleep 0.5
# The same-run ceiling: what the upstream answers with nothing else running (wrk, 64 connections,
# each request on a new connection as the worker's fetches are), before any endpoint is seeded.
ceiling=0
if command -v wrk >/dev/null; then
  ceiling=$(wrk -t1 -c64 -d5s -H 'Connection: close' "http://127.0.0.1:$port/e/1" 2>/dev/null \
    | awk '/Requests\/sec/ {print $2}')
  echo "ceiling: the upstream answers ${ceiling} fetches/s (wrk -c64, 5 s; load $(cut -d' ' -f1-3 /proc/loadavg))"
else
  echo "ceiling: not measured (wrk is missing: apt-get install wrk)"
fi

echo "seeding $n endpoints, period ${period_ms} ms (${rate}/s)"
if [[ -n "${STATEMENTS:-}" ]]; then
  psql "$url" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
fi
psql "$url" -q <<SQL
INSERT INTO endpoints (id, workspace_id, name, url, method, environment, tags, health, auth_type,
  content_type, diff_mode, timeout_ms, schedule, ignore_paths, follow_redirects, created_at, updated_at)
SELECT gen_random_uuid(), '$ws', 'e' || i, 'http://127.0.0.1:$port/e/' || i, 'GET', 'production', '[]',
  'unknown', 'none', 'application/json', 'full', 5000, 'HOURLY', '[]', false, now(), now()
FROM generate_series(1, $n) AS i;
INSERT INTO schedules (endpoint_id, workspace_id, frequency, next_run_at)
SELECT id, workspace_id, 'HOURLY', now() + interval '5 seconds' + (random() * $period_ms) * interval '1 millisecond'
FROM endpoints;
SQL

if [[ -n "${STATEMENTS:-}" ]]; then
  # This database's figures only: the server is shared.
  psql "$url" -qAtc "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)" >/dev/null
  xact0=$(psql "$url" -tAc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
fi

workers=${WORKERS:-1}
wpids=()
for w in $(seq 1 "$workers"); do
  env ${CONCURRENCY:+APIDRIFT_WORKER__CONCURRENCY=$CONCURRENCY} \
  APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.0/8 APIDRIFT_WORKER__PERIOD_OVERRIDE_MS=$period_ms \
  APIDRIFT_WORKER__POLL_MS=200 APIDRIFT_LOG=info \
    "$bin" serve --role worker --no-bootstrap --database-url "$url" >"$work/out.$w.log" 2>"$work/err.$w.log" &
  wpids+=($!)
done
peak=0
start=$(date +%s)
while (( $(date +%s) - start < seconds )); do
  sleep 5
  for wpid in "${wpids[@]}"; do
    rss=$(awk '/VmRSS/ {print $2}' /proc/$wpid/status)
    (( rss > peak )) && peak=$rss
  done
done
ticks=0
for wpid in "${wpids[@]}"; do
  ticks=$(( ticks + $(awk '{print $14 + $15}' /proc/$wpid/stat) ))
done
hz=$(getconf CLK_TCK)
for wpid in "${wpids[@]}"; do kill -TERM $wpid; done
for wpid in "${wpids[@]}"; do wait $wpid || true; done
runs=$(psql "$url" -tAc "SELECT coalesce(sum(runs + skipped), 0) FROM schedules")
overdue=$(psql "$url" -tAc "SELECT count(*) FROM schedules WHERE next_run_at < now() - interval '60 seconds'")
echo "workers: $workers; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "runs: $runs in ${seconds}s = $(python3 -c "print(round($runs/$seconds,1))") claims/s (target $rate/s; first runs capture baselines)"
echo "worker CPU (all workers): $(python3 -c "print(round($ticks/$hz,1))") s = $(python3 -c "print(round(1000*$ticks/$hz/max($runs,1),2))") ms per claim (fetch, seal, record included)"
echo "worker peak RSS: $((peak / 1024)) MB (target <= 100 MB)"
baselines=$(psql "$url" -tAc "SELECT count(*) FROM baselines")
echo "baselines captured (first runs): $baselines; samples per capture: ${APIDRIFT_BASELINE__FIRST_SAMPLES:-3}"
if [[ -n "${STATEMENTS:-}" ]]; then
  xact1=$(psql "$url" -tAc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
  echo "statements per run (pg_stat_statements calls / $runs runs; the script's own reads included):"
  psql "$url" -P pager=off -c "SELECT round(sum(calls)::numeric / greatest($runs, 1), 2) AS calls_per_run,
      round(sum(total_exec_time)::numeric / greatest($runs, 1), 3) AS exec_ms_per_run
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
  psql "$url" -P pager=off -c "SELECT round(calls::numeric / greatest($runs, 1), 3) AS per_run,
      round(mean_exec_time::numeric, 3) AS mean_ms, left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS statement
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
    ORDER BY calls DESC LIMIT 25"
  echo "transactions committed per run: $(python3 -c "print(round(($xact1 - $xact0) / max($runs, 1), 2))")"
fi
echo "schedules more than 60 s overdue at the end: $overdue"
samples=${APIDRIFT_BASELINE__FIRST_SAMPLES:-3}
if [[ "$ceiling" != 0 ]]; then
  python3 - "$runs" "$seconds" "$ceiling" "$baselines" "$samples" <<'PY'
import sys
runs, seconds, ceiling, baselines, samples = (float(x) for x in sys.argv[1:])
fetches = (runs - baselines) + baselines * samples
print(f"fetches by the worker: {fetches / seconds:.1f}/s = {fetches / seconds / ceiling:.3f}x the upstream's ceiling "
      f"({baselines:.0f} first runs of {samples:.0f} samples, {runs - baselines:.0f} checks)")
PY
fi
for w in $(seq 1 "$workers"); do
  echo "worker $w: lag per 10 s window (ms):"
  grep -o 'runs=[0-9]* lag_p50_ms=[0-9]* lag_p99_ms=[0-9]* lag_max_ms=[0-9]*' "$work/err.$w.log" || true
done
