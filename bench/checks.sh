#!/usr/bin/env bash
# Check-pipeline benchmark (issue 6 "Performance"; not part of CI).
#   bench/checks.sh                      # SQLite in a temp file
#   bench/checks.sh postgres postgres://postgres@127.0.0.1:5432/apidrift_checks_bench
# Options after the backend: --endpoints 1000 --inflight 64 --seconds 10 (use --seconds 60 for
# the "memory flat over 60 s" figure). Prints the ceiling (the same client fetching and parsing
# the ~20 KB document with nothing else), the pipeline's checks/s, their ratio (target >= 0.5)
# and the RSS sampled every second.
set -euo pipefail
cd "$(dirname "$0")/.."
backend=${1:-sqlite}
shift || true
if [[ "$backend" == postgres ]]; then
  url=${1:?a PostgreSQL URL whose database may be written}
  shift
  createdb_url=${url%/*}/postgres
  db=${url##*/}
  psql "$createdb_url" -qc "DROP DATABASE IF EXISTS $db" -qc "CREATE DATABASE $db" >/dev/null
  exec cargo run --quiet --release -p apidrift-monitor --example checks_bench -- postgres "$url" "$@"
fi
exec cargo run --quiet --release -p apidrift-monitor --example checks_bench -- sqlite "$@"
