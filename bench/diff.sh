#!/usr/bin/env bash
# CLI diff benchmark (issue 16, "the CLI diff"; not part of CI).
#
# Writes the benchmark corpus (crates/diff/examples/corpus.rs: a 10 MB pair of user lists with
# 200 items changed), then alternates RUNS runs of
#   apidrift diff A B    the CLI end to end: read both files, parse, diff, print the report
#   yardstick A B        serde_json parsing both files into `Value`, as a process (the ceiling of
#                        issue 16: crates/diff/examples/yardstick.rs)
# and prints the median wall time and the median CPU time (user + sys) of each, their ratio
# (target <= 0.5) and the load average. CPU time is what to read on a busy machine; wall time on a
# quiet one. Then, in one process, the parse of both files alone against serde_json's
# (crates/diff/examples/parse_vs_serde.rs).
#
#   bench/diff.sh            RUNS (default 9), SIZE (10mb, 1mb or 25kb), MODE (schema or full),
#                            APIDRIFT_BIN (a prebuilt release binary)
#
# Needs python3. Builds the release binary and examples unless APIDRIFT_BIN is given.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUNS="${RUNS:-9}"
SIZE="${SIZE:-10mb}"
MODE="${MODE:-schema}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
command -v python3 >/dev/null || { echo "bench/diff.sh: python3 is required" >&2; exit 2; }

BIN="${APIDRIFT_BIN:-}"
if [[ -z "$BIN" ]]; then
    cargo build --quiet --release -p apidrift --bin apidrift
    BIN="$TARGET/release/apidrift"
fi
cargo build --quiet --release -p apidrift-diff --example corpus --example yardstick \
    --example parse_vs_serde
EXAMPLES="$TARGET/release/examples"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$EXAMPLES/corpus" "$WORK" >/dev/null
A="$WORK/$SIZE-a.json"
B="$WORK/$SIZE-b.json"
echo "== $(basename "$A") $(stat -c %s "$A") bytes, $(basename "$B") $(stat -c %s "$B") bytes, mode $MODE"

# One timed run: appends "wall user sys" (seconds) to FILE. `apidrift diff` exits 1 when it
# finds a breaking change, which is not a failure here.
TIMEFORMAT='%R %U %S'
timed() {
    local file="$1"
    shift
    { time "$@" >/dev/null 2>&1 || true; } 2>>"$file"
}

# Warm the page cache and the binaries.
"$BIN" diff --mode "$MODE" "$A" "$B" >/dev/null 2>&1 || true
"$EXAMPLES/yardstick" "$A" "$B" >/dev/null
for _ in $(seq 1 "$RUNS"); do
    timed "$WORK/diff.times" "$BIN" diff --mode "$MODE" "$A" "$B"
    timed "$WORK/yardstick.times" "$EXAMPLES/yardstick" "$A" "$B"
done
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$WORK/diff.times" "$WORK/yardstick.times" "$RUNS" <<'PY'
import statistics, sys
def load(path):
    rows = [list(map(float, line.split())) for line in open(path) if line.strip()]
    wall = statistics.median(r[0] for r in rows) * 1000
    cpu = statistics.median(r[1] + r[2] for r in rows) * 1000
    return wall, cpu
(dw, dc), (yw, yc) = load(sys.argv[1]), load(sys.argv[2])
runs = sys.argv[3]
print(f"{'apidrift diff (end to end)':36s} wall {dw:8.1f} ms   cpu {dc:8.1f} ms   (median of {runs})")
print(f"{'yardstick (serde_json parses both)':36s} wall {yw:8.1f} ms   cpu {yc:8.1f} ms")
def line(name, value, target, ok):
    print(f"{name:44s} {value:>8}   target {target:<8} {'ok' if ok else 'MISSED'}")
line("diff / yardstick, CPU time", f"{dc / yc:.2f}x", "<= 0.5x", dc / yc <= 0.5)
line("diff / yardstick, wall time", f"{dw / yw:.2f}x", "<= 0.5x", dw / yw <= 0.5)
PY
"$EXAMPLES/parse_vs_serde" "$A" "$B" "$RUNS"
