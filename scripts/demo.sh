#!/usr/bin/env bash
# The demo: migrate, seed, run a pass, run it again, and show that the second
# pass sent nothing. Run it against a throwaway server:
#
#   make demo        # = go run ./tools/devpg -- ./scripts/demo.sh
#
# Environment: DATABASE_URL (set by devpg), SEED_N (default 3000),
# NOTICE_KEY_SECRET (a demo value by default), DEMO_NOW (RFC3339, default
# the clock), SCAN_CONFIG (default scripts/demo-policy.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
# On failure, show where the logs are.
trap 'status=$?; if (( status != 0 )) && [[ -n "${logs:-}" && -s "$logs" ]]; then echo "demo: failed ($status); last log lines from $logs:" >&2; tail -n 20 "$logs" >&2; fi' EXIT

if [[ -z "${DATABASE_URL:-}" ]]; then
  echo "demo: DATABASE_URL is not set; run: make demo (go run ./tools/devpg -- ./scripts/demo.sh)" >&2
  exit 2
fi

export NOTICE_KEY_SECRET="${NOTICE_KEY_SECRET:-demo-only-secret-do-not-use-in-production-0123456789}"
export SCAN_CONFIG="${SCAN_CONFIG:-scripts/demo-policy.yaml}"
export SCAN_SENDER=outbox
workdir="$(mktemp -d "${TMPDIR:-/tmp}/scan-demo-XXXXXX")"
export SCAN_OUTBOX_DIR="$workdir/outbox"
mkdir -p "$SCAN_OUTBOX_DIR"
logs="$workdir/scan.log" # the JSON logs of every scan command, kept out of the way
now="${DEMO_NOW:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}"

echo "== build"
go build -o bin/scan ./cmd/scan
go build -o bin/seed ./tools/seed

echo "== scan migrate"
./bin/scan migrate 2>>"$logs"

echo "== seed ${SEED_N:-3000} subscriptions around ${now}"
./bin/seed -n "${SEED_N:-3000}" -now "$now"

echo "== first pass (scan run --now ${now})"
first="$(./bin/scan run --now "$now" 2>>"$logs")"
echo "$first"

echo "== second pass: everything is already claimed, nothing is sent twice"
second="$(./bin/scan run --now "$now" 2>>"$logs")"
echo "$second"

echo "== scan lookup sub_000001: every ledger row of one subscription"
./bin/scan lookup sub_000001 2>>"$logs" || true

echo "== scan status: the operator's one screen (exit 1 would mean something needs a person)"
./bin/scan status 2>>"$logs" || true

echo "== scan preview: sample notices per kind and locale, for review (nothing claimed, nothing sent)"
./bin/scan preview --kind renewal_notice_t72,trial_ending --locale en,de-AT --out "$workdir/preview" 2>>"$logs"

count="$(find "$SCAN_OUTBOX_DIR" -type f -name '*.eml' | wc -l | tr -d ' ')"
echo "== outbox: ${SCAN_OUTBOX_DIR} holds ${count} .eml files"
echo "== logs: ${logs} ($(wc -l <"$logs" | tr -d ' ') lines; e.g. grep invalid ${logs})"
