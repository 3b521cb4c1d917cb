#!/usr/bin/env bash
# API benchmark (issue 5 "Performance"; not part of CI).
#
# With 10,000 endpoints in the workspace, loads GET /api/v1/endpoints (25 rows) and
# GET /api/v1/diffs with wrk at 64 connections for 20 s, on SQLite and on PostgreSQL, and in the
# same run measures the ceilings: the same server's GET /healthz (no token, no database), an actix
# handler answering a static 2 KB JSON document (crates/api/examples/static_json.rs) and pgbench
# running the route's own statement (the page, its total, next runs and uptime in one statement,
# as pg_stat_statements recorded it during the run; the token lookup is cached). Prints each figure, the load average
# while it was taken, the writes to `rate_limits` during the PostgreSQL run (leased budgets: far
# fewer than the requests), and the ratios against the targets:
#   route / the same server's /healthz >= 0.15 (SQLite), >= 0.05 (PostgreSQL) (issue 16);
#   PostgreSQL route >= 0.6 x pgbench; SQLite route >= 0.15 x static JSON; p99 <= 25 ms;
#   zero non-2xx (rate limits are raised for the run); idle RSS <= 30 MB.
#
#   bench/api.sh
#
# Needs: wrk (`apt-get install wrk`), pgbench and psql (PostgreSQL client), curl, python3, and a
# PostgreSQL server that preloads pg_stat_statements (as the tests need) at APIDRIFT_BENCH_PG (default postgres://postgres@127.0.0.1:5432/postgres;
# a database apidrift_bench is created and dropped). DURATION (default 20s), CONNECTIONS (64),
# THREADS (2), ENDPOINTS (10000), APIDRIFT_BIN and STATIC_JSON_BIN (prebuilt release binaries).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DURATION="${DURATION:-20s}"
CONNECTIONS="${CONNECTIONS:-64}"
THREADS="${THREADS:-2}"
ENDPOINTS="${ENDPOINTS:-10000}"
PG_SERVER="${APIDRIFT_BENCH_PG:-postgres://postgres@127.0.0.1:5432/postgres}"
PG_DB="apidrift_bench"
PG_URL="${PG_SERVER%/*}/$PG_DB"

for tool in wrk pgbench psql curl python3; do
    command -v "$tool" >/dev/null || { echo "bench/api.sh: $tool is required" >&2; exit 2; }
done

# APIDRIFT_BIN / STATIC_JSON_BIN name prebuilt release binaries; otherwise they are built here.
BIN="${APIDRIFT_BIN:-}"
STATIC="${STATIC_JSON_BIN:-}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [[ -z "$BIN" ]]; then
    cargo build --quiet --release -p apidrift --bin apidrift
    BIN="$TARGET/release/apidrift"
fi
if [[ -z "$STATIC" ]]; then
    cargo build --quiet --release -p apidrift-api --example static_json
    STATIC="$TARGET/release/examples/static_json"
fi

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    psql -q "$PG_SERVER" -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

unset DATABASE_URL ENDPOINT_SECRET_KEY ENDPOINT_SECRET_KEY_PREVIOUS APIDRIFT_CONFIG || true
export APIDRIFT_LIMITS__READS_PER_MINUTE=100000000
export APIDRIFT_LIMITS__CREATES_PER_MINUTE=100000000
export APIDRIFT_LIMITS__UNAUTHENTICATED_PER_MINUTE=100000000
export APIDRIFT_LOG=warn
export ENDPOINT_SECRET_KEY="$("$BIN" keygen)"

json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }

# start_server URL NAME → sets ADDR; records the pid.
start_server() {
    local url="$1" name="$2"
    "$BIN" serve --no-bootstrap --bind 127.0.0.1:0 --database-url "$url" \
        >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PIDS+=($!)
    SERVER_PID=$!
    ADDR=""
    for _ in $(seq 1 600); do
        ADDR="$(sed -n 's#^apidrift: listening on http://##p' "$WORK/$name.out" 2>/dev/null | head -n 1 || true)"
        [[ -n "$ADDR" ]] && return 0
        sleep 0.1
    done
    cat "$WORK/$name.err" >&2
    echo "bench/api.sh: serve did not start" >&2
    exit 1
}

rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

# seed URL → sets TOKEN, WS; creates ENDPOINTS endpoints through the API (200 per request).
seed() {
    local url="$1" addr="$2"
    WS="$("$BIN" workspace create --name bench --database-url "$url" | json_field id)"
    TOKEN="$("$BIN" token create --workspace "$WS" --role owner \
        --scopes endpoints:read,endpoints:write --database-url "$url" | json_field token)"
    python3 - "$addr" "$TOKEN" "$ENDPOINTS" <<'PY'
import json, sys, urllib.request
addr, token, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = 0
while n < total:
    batch = [{"name": f"endpoint-{i}", "url": f"https://api.example.com/e/{i}",
              "environment": ["production", "staging"][i % 2], "tags": ["bench"]}
             for i in range(n, min(n + 200, total))]
    req = urllib.request.Request(f"http://{addr}/api/v1/endpoints", data=json.dumps(batch).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        assert r.status == 201, r.status
    n += len(batch)
PY
}

# load NAME URL → prints "requests/s p99_ms non2xx"
load() {
    local name="$1" url="$2"
    cat >"$WORK/report.lua" <<'LUA'
done = function(summary, latency, requests)
  local non2xx = summary.errors.status + summary.errors.connect + summary.errors.read
      + summary.errors.write + summary.errors.timeout
  io.write(string.format("RESULT %.1f %.2f %d\n", summary.requests / (summary.duration / 1e6),
      latency:percentile(99) / 1000, non2xx))
end
LUA
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s "$WORK/report.lua" \
        -H "Authorization: Bearer ${TOKEN:-none}" "$url" >"$WORK/$name.wrk"
    sed -n 's/^RESULT //p' "$WORK/$name.wrk"
}

declare -A RPS P99 ERR
record() {
    local name="$1" line
    line="$(load "$name" "$2")"
    read -r RPS[$name] P99[$name] ERR[$name] <<<"$line"
    printf '%-28s %10s req/s   p99 %7s ms   non-2xx %-4s load %s\n' "$name" "${RPS[$name]}" \
        "${P99[$name]}" "${ERR[$name]}" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

# Rows of rate_limits written so far (statistics lag up to a second: read after a pause).
rate_limit_writes() {
    sleep 1.5
    psql -qAt "$PG_URL" -c "SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables
                            WHERE relname = 'rate_limits'"
}

echo "== ceiling: static 2 KB JSON (actix, same workers)"
"$STATIC" 127.0.0.1:3901 >/dev/null 2>&1 &
PIDS+=($!)
sleep 1
TOKEN=none record static-json "http://127.0.0.1:3901/"

echo "== SQLite"
start_server "sqlite://$WORK/bench.db" sqlite
SQLITE_PID=$SERVER_PID
sleep 1
IDLE_SQLITE="$(rss_mb "$SQLITE_PID")"
seed "sqlite://$WORK/bench.db" "$ADDR"
TOKEN=none record sqlite-healthz "http://$ADDR/healthz"
record sqlite-endpoints "http://$ADDR/api/v1/endpoints"
record sqlite-diffs "http://$ADDR/api/v1/diffs"
kill -TERM "$SQLITE_PID"

echo "== PostgreSQL"
psql -q "$PG_SERVER" -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null
psql -q "$PG_SERVER" -c "CREATE DATABASE $PG_DB" >/dev/null
start_server "$PG_URL" postgres
PG_PID=$SERVER_PID
sleep 1
IDLE_PG="$(rss_mb "$PG_PID")"
seed "$PG_URL" "$ADDR"
# Statistics as autovacuum leaves them within a minute of a bulk load: without them PostgreSQL
# takes the freshly seeded workspace for 17 rows and sorts all 10,000 for a page (17 ms).
psql -q "$PG_URL" -c "ANALYZE" >/dev/null
TOKEN=none record postgres-healthz "http://$ADDR/healthz"
psql -q "$PG_URL" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
    -c "SELECT pg_stat_statements_reset()" >/dev/null
WRITES_BEFORE="$(rate_limit_writes)"
record postgres-endpoints "http://$ADDR/api/v1/endpoints"
WRITES_AFTER="$(rate_limit_writes)"
RL_WRITES=$((WRITES_AFTER - WRITES_BEFORE))
printf '%-28s %10s rows written during the postgres-endpoints run\n' rate_limits "$RL_WRITES"
record postgres-diffs "http://$ADDR/api/v1/diffs"

echo "== ceiling: pgbench running the route's own statement, as the route runs it"
# The statement the route ran most during the postgres-endpoints run, run as the route runs it:
# under its generic plan, with the values the route binds (the server numbers a placeholder per
# reference, so each one's value is read off the SQL before it: page of 25 from the start, the
# day/week/month uptime windows, no sparkline points). A placeholder this does not know stops the
# script rather than guess.
psql -qAt "$PG_URL" -c "SELECT query FROM pg_stat_statements WHERE query LIKE 'WITH page AS%'
                        ORDER BY calls DESC LIMIT 1" >"$WORK/route.raw"
[[ -s "$WORK/route.raw" ]] || { echo "bench/api.sh: no page statement in pg_stat_statements" >&2; exit 1; }
python3 - "$WORK/route.raw" "$WS" "$WORK/route.args" >"$WORK/route.sql" <<'PY'
import datetime, re, sys
sql = " ".join(open(sys.argv[1]).read().split())
ws, args = sys.argv[2], []
now = datetime.datetime.now(datetime.timezone.utc)
since = lambda days: (now - datetime.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
windows = 0
def value(before):
    global windows
    if before.endswith("workspace_id = "): return ws
    if before.endswith("OFFSET "): return "0"
    if before.endswith("AS capped LIMIT "): return "25"
    # pg_stat_statements may show the statement's constants as placeholders too.
    if before.endswith("e.id DESC LIMIT "): return "100"
    if before.endswith("c.id DESC LIMIT "): return "0"
    if before.endswith("http_status < "): return "500"
    if before.endswith("), "): return "0"
    if before.endswith(" ON "): return "true"
    if before.endswith("started_at >= "):
        windows += 1
        return since(1 if windows <= 2 else 7 if windows <= 4 else 30)
    sys.exit(f"bench/api.sh: no value for the placeholder after {before[-40:]!r}")
def name(m):
    args.append(f"-Dp{m.group(1)}={value(sql[:m.start()])}")
    return ":p" + m.group(1)
print(re.sub(r"\$(\d+)", name, sql) + ";")
open(sys.argv[3], "w").write("\n".join(args))
PY
psql -qAt "$PG_URL" -c "SELECT round(mean_exec_time::numeric, 3) FROM pg_stat_statements
                        WHERE query LIKE 'WITH page AS%' ORDER BY calls DESC LIMIT 1" | {
    read -r exec
    printf '%-28s %10s ms execution per call in the route\n' page-statement "$exec"
}
mapfile -t ROUTE_ARGS <"$WORK/route.args"
PGBENCH_TPS="$(PGOPTIONS='-c plan_cache_mode=force_generic_plan' pgbench -n -M prepared \
    -c "$CONNECTIONS" -j "$THREADS" -T "${DURATION%s}" "${ROUTE_ARGS[@]}" \
    -f "$WORK/route.sql" "$PG_URL" 2>"$WORK/pgbench.err" | sed -n 's/^tps = \([0-9.]*\).*/\1/p' || true)"
[[ -n "$PGBENCH_TPS" ]] || { cat "$WORK/pgbench.err" >&2; exit 1; }
printf '%-28s %10s tx/s   load %s\n' pgbench-route-sql "$PGBENCH_TPS" "$(cut -d' ' -f1-3 /proc/loadavg)"

echo "== ratios and targets"
python3 - "${RPS[static-json]}" "${RPS[sqlite-endpoints]}" "${RPS[postgres-endpoints]}" \
    "$PGBENCH_TPS" "${P99[sqlite-endpoints]}" "${P99[sqlite-diffs]}" "${P99[postgres-endpoints]}" \
    "${P99[postgres-diffs]}" "$IDLE_SQLITE" "$IDLE_PG" \
    "${ERR[sqlite-endpoints]}" "${ERR[sqlite-diffs]}" "${ERR[postgres-endpoints]}" "${ERR[postgres-diffs]}" \
    "${RPS[sqlite-healthz]}" "${RPS[postgres-healthz]}" "$RL_WRITES" "${DURATION%s}" <<'PY'
import sys
a = sys.argv[1:]
static, sq, pg, pgb = map(float, a[0:4])
p99 = list(map(float, a[4:8]))
idle = list(map(float, a[8:10]))
errs = list(map(int, a[10:14]))
sq_health, pg_health = map(float, a[14:16])
rl_writes, seconds = int(a[16]), float(a[17])
def line(name, value, target, ok):
    print(f"{name:44s} {value:>10}   target {target:<10} {'ok' if ok else 'MISSED'}")
line("SQLite route / same server's /healthz", f"{sq / sq_health:.3f}x", ">= 0.15x", sq / sq_health >= 0.15)
line("PostgreSQL route / same server's /healthz", f"{pg / pg_health:.3f}x", ">= 0.05x", pg / pg_health >= 0.05)
requests = pg * seconds
line("rate_limits writes per PostgreSQL request", f"{rl_writes / max(requests, 1):.5f}", "< 0.01", rl_writes < 0.01 * requests)
line("SQLite route / static JSON", f"{sq / static:.2f}x", ">= 0.15x", sq / static >= 0.15)
line("PostgreSQL route / pgbench", f"{pg / pgb:.2f}x", ">= 0.6x", pg / pgb >= 0.6)
line("worst p99", f"{max(p99):.1f} ms", "<= 25 ms", max(p99) <= 25)
line("non-2xx responses", str(sum(errs)), "0", sum(errs) == 0)
line("idle RSS (SQLite, PostgreSQL)", f"{idle[0]:.1f}/{idle[1]:.1f} MB", "<= 30 MB", max(idle) <= 30)
PY
