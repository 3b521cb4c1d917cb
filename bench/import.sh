#!/usr/bin/env bash
# OpenAPI import benchmark (issue 12 items 3 and 4, D22; not part of CI).
#
# Starts `apidrift serve` (release, SQLite), logs in a console user and imports Stripe's OpenAPI
# 3.0 description (tests/data/realworld/stripe-spec3-2022-04.json, 4.2 MB) through
# POST /api/openapi/parse with "import": true, twice (the second creates nothing: every endpoint
# is already registered). Prints, with the load average:
#   import time / serde_json's parse of the same document into `Value` (the yardstick:
#     crates/diff/examples/yardstick.rs parses it twice in one process; half its time is one parse);
#   RSS growth after the import / document size (D22: <= 4), and the peak (VmHWM) growth;
#   RSS after the second import, and the worst /healthz latency polled during the import;
#   the database's growth (file + WAL) by the first import / document size (issue 29: <= 3).
#
#   bench/import.sh          RUNS (default 3), DOC (the document), APIDRIFT_BIN (a prebuilt
#                            release binary)
#
# Needs curl and python3. Builds the release binary and the yardstick unless given.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUNS="${RUNS:-3}"
DOC="${DOC:-$ROOT/tests/data/realworld/stripe-spec3-2022-04.json}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
for tool in curl python3; do
    command -v "$tool" >/dev/null || { echo "bench/import.sh: $tool is required" >&2; exit 2; }
done
[[ -f "$DOC" ]] || { echo "bench/import.sh: $DOC not found" >&2; exit 2; }

BIN="${APIDRIFT_BIN:-}"
if [[ -z "$BIN" ]]; then
    cargo build --quiet --release -p apidrift --bin apidrift
    BIN="$TARGET/release/apidrift"
fi
YARDSTICK="${YARDSTICK_BIN:-}"
if [[ -z "$YARDSTICK" ]]; then
    cargo build --quiet --release -p apidrift-diff --example yardstick
    YARDSTICK="$TARGET/release/examples/yardstick"
fi

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    [[ -n "$SERVER_PID" ]] && kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
unset DATABASE_URL ENDPOINT_SECRET_KEY ENDPOINT_SECRET_KEY_PREVIOUS APIDRIFT_CONFIG || true
export APIDRIFT_LIMITS__CREATES_PER_MINUTE=100000
export APIDRIFT_LIMITS__READS_PER_MINUTE=100000
export APIDRIFT_LIMITS__UNAUTHENTICATED_PER_MINUTE=100000
export APIDRIFT_LOG=warn
export ENDPOINT_SECRET_KEY="$("$BIN" keygen)"
SIZE="$(stat -c %s "$DOC")"

# The import body: {"import": true, "document": <the document>}.
{ printf '{"import": true, "document": '; cat "$DOC"; printf '}'; } >"$WORK/body.json"

rss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status"; }
# Anonymous memory (heap, SQLite's page cache) and file-backed pages (the database file mapped by
# SQLite's mmap_size, reclaimable by the kernel) of the RSS.
split() { awk '/^RssAnon:/ {a=$2} /^RssFile:/ {f=$2} END {printf "anon %.1f MiB, file %.1f MiB", a/1024, f/1024}' "/proc/$1/status"; }
hwm() { awk '/^VmHWM:/ {print $2 * 1024}' "/proc/$1/status"; }
# The database's bytes on disk: the file and its write-ahead log (an upper bound of what an
# import wrote: the WAL may hold a page more than once until a checkpoint).
dbsize() { local n=0; for f in "$1" "$1-wal"; do [[ -f "$f" ]] && n=$((n + $(stat -c %s "$f"))); done; echo "$n"; }

# Yardstick: serde_json parsing the document (twice in one process: half is one parse).
TIMEFORMAT='%R'
"$YARDSTICK" "$DOC" "$DOC" >/dev/null
serde_times=()
for _ in $(seq 1 "$RUNS"); do
    t="$( { time "$YARDSTICK" "$DOC" "$DOC" >/dev/null; } 2>&1 )"
    serde_times+=("$(python3 -c "print($t / 2)")")
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for run in $(seq 1 "$RUNS"); do
    DB="$WORK/import-$run.db"
    WS="$("$BIN" workspace create --create --name bench --database-url "sqlite://$DB" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
    printf 'bench password 123\n' | "$BIN" user create --email bench@example.com --password-stdin \
        --workspace "$WS" --role owner --database-url "sqlite://$DB" >/dev/null
    "$BIN" serve --no-bootstrap --bind 127.0.0.1:0 --database-url "sqlite://$DB" \
        >"$WORK/serve.out" 2>"$WORK/serve.err" &
    SERVER_PID=$!
    ADDR=""
    for _ in $(seq 1 300); do
        ADDR="$(sed -n 's#^apidrift: listening on http://##p' "$WORK/serve.out" | head -n 1 || true)"
        [[ -n "$ADDR" ]] && break
        sleep 0.1
    done
    [[ -n "$ADDR" ]] || { echo "serve did not start" >&2; cat "$WORK/serve.err" >&2; exit 1; }
    BASE="http://$ADDR"
    JAR="$WORK/jar-$run"
    curl -s -o /dev/null -c "$JAR" -H "Origin: $BASE" \
        --data-urlencode email=bench@example.com --data-urlencode 'password=bench password 123' \
        "$BASE/console/login"
    CSRF="$(curl -s -b "$JAR" "$BASE/console/import" | sed -n 's/.*name="_csrf" value="\([^"]*\)".*/\1/p' | head -n 1)"
    sleep 1
    before="$(rss "$SERVER_PID")"
    db_before="$(dbsize "$DB")"
    split_before="$(split "$SERVER_PID")"
    # Poll /healthz during the import; keep the worst latency.
    ( worst=0; while [[ ! -f "$WORK/done-$run" ]]; do
          t="$(curl -s -o /dev/null -w '%{time_total}' "$BASE/healthz")"
          worst="$(python3 -c "print(max($worst, $t))")"; sleep 0.05
      done; echo "$worst" >"$WORK/worst-$run" ) &
    POLLER=$!
    import_once() {
        curl -s -o "$WORK/answer.json" -w '%{http_code} %{time_total}' -b "$JAR" \
            -H "Origin: $BASE" -H "X-CSRF-Token: $CSRF" -H 'Content-Type: application/json' \
            --data-binary "@$WORK/body.json" "$BASE/api/openapi/parse"
    }
    read -r code1 t1 <<<"$(import_once)"
    created="$(python3 -c "import json; print(json.load(open('$WORK/answer.json'))['import']['created'])")"
    sleep 1
    db_after="$(dbsize "$DB")"
    after1="$(rss "$SERVER_PID")"
    # The allocator returns freed pages after a decay time (jemalloc: about 10 s).
    sleep "${SETTLE:-15}"
    settled="$(rss "$SERVER_PID")"
    split_after1="$(split "$SERVER_PID")"
    read -r code2 t2 <<<"$(import_once)"
    again="$(python3 -c "import json; a=json.load(open('$WORK/answer.json'))['import']; print(a['created'], sum(1 for s in a['skipped'] if s['reason']=='already registered'))")"
    touch "$WORK/done-$run"
    wait "$POLLER"
    sleep 1
    after2="$(rss "$SERVER_PID")"
    peak="$(hwm "$SERVER_PID")"
    kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
    serde="$(median "${serde_times[@]}")"
    python3 - "$SIZE" "$before" "$after1" "$after2" "$peak" "$t1" "$t2" "$serde" "$code1" "$code2" \
        "$created" "$again" "$(cat "$WORK/worst-$run")" <<'PY'
import sys
size, before, after1, after2, peak = map(int, sys.argv[1:6])
t1, t2, serde = map(float, sys.argv[6:9])
code1, code2, created, again, worst = sys.argv[9:14]
mb = 1024 * 1024
print(f"run: document {size / mb:.1f} MiB; import {code1} in {t1:.2f} s ({created} created), "
      f"again {code2} in {t2:.2f} s (created, already registered: {again})")
print(f"  import / serde_json parse ({serde * 1000:.0f} ms): {t1 / serde:.1f}x (again: {t2 / serde:.1f}x)")
print(f"  RSS {before / mb:.1f} MiB -> {after1 / mb:.1f} after the import ({(after1 - before) / size:.2f}x the document; "
      f"D22 <= 4) -> {after2 / mb:.1f} after the second ({(after2 - before) / size:.2f}x); "
      f"peak {peak / mb:.1f} MiB ({(peak - before) / size:.2f}x)")
print(f"  worst /healthz during the imports: {float(worst) * 1000:.0f} ms")
PY
    python3 -c "import sys; b, a, s = map(int, sys.argv[1:4]); print(f'  RSS {a/2**20:.1f} MiB 1 s after the import, {s/2**20:.1f} MiB ${SETTLE:-15} s after: growth {(s-b)/$SIZE:.2f}x the document')" "$before" "$after1" "$settled"
    echo "  RSS split before: $split_before; ${SETTLE:-15} s after the import: $split_after1"
    python3 -c "import sys; b, a, s = map(int, sys.argv[1:4]); print(f'  database {b/2**20:.1f} MiB -> {a/2**20:.1f} MiB (file + WAL): growth {(a-b)/s:.2f}x the document (target <= 3)')" "$db_before" "$db_after" "$SIZE"
    echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
