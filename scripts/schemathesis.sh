#!/usr/bin/env bash
# Property-based API testing with schemathesis (from PyPI) against a running apidrift on SQLite:
# every check, a fixed seed, and a client-side rate limit well below the server's own limits
# (which are raised too, so schemathesis never meets a 429 it did not ask for).
#
#   scripts/schemathesis.sh            # builds the binary if needed; exits non-zero on failures
#
# Environment: APIDRIFT_BIN (a prebuilt binary), SCHEMATHESIS_VENV (default
# target/schemathesis-venv), SCHEMATHESIS_MAX_EXAMPLES (default 40), SCHEMATHESIS_SEED (default
# 20261121). Needs python3 with venv and network access to PyPI on the first run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VERSION="4.32.5"
VENV="${SCHEMATHESIS_VENV:-${CARGO_TARGET_DIR:-$ROOT/target}/schemathesis-venv}"
MAX_EXAMPLES="${SCHEMATHESIS_MAX_EXAMPLES:-40}"
SEED="${SCHEMATHESIS_SEED:-20261121}"

if [[ ! -x "$VENV/bin/schemathesis" ]] || ! "$VENV/bin/schemathesis" --version | grep -q "$VERSION"; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "schemathesis==$VERSION"
fi

BIN="${APIDRIFT_BIN:-}"
if [[ -z "$BIN" ]]; then
    cargo build --quiet -p apidrift --bin apidrift
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/apidrift"
fi

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]]; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

DB="sqlite://$WORK/apidrift.db"
unset DATABASE_URL ENDPOINT_SECRET_KEY ENDPOINT_SECRET_KEY_PREVIOUS APIDRIFT_CONFIG || true
export APIDRIFT_LIMITS__READS_PER_MINUTE=1000000
export APIDRIFT_LIMITS__CREATES_PER_MINUTE=1000000
export APIDRIFT_LIMITS__CHECKS_PER_MINUTE=1000000
export APIDRIFT_LIMITS__UNAUTHENTICATED_PER_MINUTE=1000000
export APIDRIFT_LOG=warn

# A workspace and a token with every scope, from the admin CLI.
WS_JSON="$("$BIN" workspace create --name schemathesis --create --database-url "$DB")"
WS_ID="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <<<"$WS_JSON")"
TOKEN_JSON="$("$BIN" token create --workspace "$WS_ID" --role owner \
    --scopes endpoints:read,endpoints:write,checks:run,baselines:write --database-url "$DB")"
TOKEN="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' <<<"$TOKEN_JSON")"

ENDPOINT_SECRET_KEY="$("$BIN" keygen)" "$BIN" serve --no-bootstrap --bind 127.0.0.1:0 \
    --database-url "$DB" >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
ADDR=""
for _ in $(seq 1 600); do
    ADDR="$(sed -n 's#^apidrift: listening on http://##p' "$WORK/stdout" 2>/dev/null | head -n 1 || true)"
    [[ -n "$ADDR" ]] && break
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        cat "$WORK/stderr" >&2
        echo "schemathesis.sh: apidrift serve exited" >&2
        exit 1
    fi
    sleep 0.1
done
[[ -n "$ADDR" ]] || { echo "schemathesis.sh: serve did not start" >&2; exit 1; }
BASE="http://$ADDR"

# Seed one endpoint so the {id} routes have something real to find.
curl -fsS -o /dev/null -X POST "$BASE/api/v1/endpoints" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' -d '{"name":"seed","url":"https://example.com/"}'

# Left out: the routes that fetch an upstream or send a webhook delivery (a check, a baseline
# capture, a webhook's test delivery, each with its /v1 twin). They make outbound requests, which
# a test machine cannot make (and which the SSRF and e2e suites cover against loopback servers).
set +e
"$VENV/bin/schemathesis" --config-file "$ROOT/scripts/schemathesis.toml" run "$BASE/openapi.json" \
    --url "$BASE" \
    --checks all \
    --seed "$SEED" \
    --max-examples "$MAX_EXAMPLES" \
    --rate-limit 200/s \
    --header "Authorization: Bearer $TOKEN" \
    --exclude-operation-id runCheck \
    --exclude-operation-id runCheckV1 \
    --exclude-operation-id captureBaselineV1 \
    --exclude-operation-id captureBaseline \
    --exclude-operation-id testWebhook \
    --exclude-operation-id testWebhookV1 \
    --no-color
STATUS=$?
set -e
if [[ $STATUS -ne 0 ]]; then
    echo "schemathesis.sh: failures (exit $STATUS); server log tail:" >&2
    tail -n 20 "$WORK/stderr" >&2
fi
exit $STATUS
