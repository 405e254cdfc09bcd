#!/usr/bin/env bash
# The demo over real SMTP: start a local Mailpit (loopback only), migrate,
# seed, run one pass with the smtp sender into it, check that Mailpit holds
# exactly the notices the pass sent, and print where to look at them.
#
#   make demo-mail   # = bin/devpg -- ./scripts/demo-mail.sh
#
# Mailpit is installed once with `go install` into .cache/bin (about 90 s
# the first time). A loopback SMTP server is always allowed, so neither
# SCAN_ENVIRONMENT=production nor a redirect is needed and every notice
# keeps its real (seeded) recipient.
#
# On a terminal the script then waits, with Mailpit running, until Ctrl-C;
# otherwise (CI) it stops Mailpit and exits. DEMO_MAIL_WAIT=0/1 overrides.
#
# Environment: DATABASE_URL (set by devpg), SEED_N (default 300),
# MAILPIT_VERSION (default v1.33.1), MAILPIT_SMTP (default 127.0.0.1:1025),
# MAILPIT_UI (default 127.0.0.1:8025), NOTICE_KEY_SECRET, DEMO_NOW,
# SCAN_CONFIG as in demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${DATABASE_URL:-}" ]]; then
  echo "demo-mail: DATABASE_URL is not set; run: make demo-mail" >&2
  exit 2
fi

mailpit_version="${MAILPIT_VERSION:-v1.33.1}"
smtp_addr="${MAILPIT_SMTP:-127.0.0.1:1025}"
ui_addr="${MAILPIT_UI:-127.0.0.1:8025}"
for a in "$smtp_addr" "$ui_addr"; do
  case "$a" in
    127.*:* | localhost:* | \[::1\]:*) ;;
    *) echo "demo-mail: $a is not a loopback address; Mailpit listens on loopback only" >&2; exit 2 ;;
  esac
done
ui="http://${ui_addr}"

workdir="$(mktemp -d "${TMPDIR:-/tmp}/scan-demo-mail-XXXXXX")"
logs="$workdir/scan.log"
mailpit_pid=""
cleanup() {
  status=$?
  if [[ -n "$mailpit_pid" ]]; then kill "$mailpit_pid" 2>/dev/null || true; wait "$mailpit_pid" 2>/dev/null || true; fi
  if ((status != 0)); then
    echo "demo-mail: failed ($status); logs in $workdir" >&2
    [[ -s "$logs" ]] && tail -n 20 "$logs" >&2
    [[ -s "$workdir/mailpit.log" ]] && tail -n 10 "$workdir/mailpit.log" >&2
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

bin="$PWD/.cache/bin"
mailpit="$bin/mailpit"
if [[ ! -x "$mailpit" || "$(cat "$bin/.mailpit-version" 2>/dev/null)" != "$mailpit_version" ]]; then
  echo "== go install github.com/axllent/mailpit@${mailpit_version} into .cache/bin (once)"
  mkdir -p "$bin"
  GOBIN="$bin" go install "github.com/axllent/mailpit@${mailpit_version}"
  echo "$mailpit_version" >"$bin/.mailpit-version"
fi

echo "== start Mailpit: SMTP ${smtp_addr}, web ${ui}"
"$mailpit" --smtp "$smtp_addr" --listen "$ui_addr" --database "$workdir/mailpit.db" \
  --disable-version-check >"$workdir/mailpit.log" 2>&1 &
mailpit_pid=$!
for _ in $(seq 1 100); do
  if curl -fsS "${ui}/api/v1/info" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$mailpit_pid" 2>/dev/null; then
    echo "demo-mail: Mailpit exited (port taken? set MAILPIT_SMTP / MAILPIT_UI):" >&2
    cat "$workdir/mailpit.log" >&2
    mailpit_pid=""
    exit 1
  fi
  sleep 0.1 # polling a child's readiness; nothing to wait on instead
done
curl -fsS "${ui}/api/v1/info" >/dev/null

export NOTICE_KEY_SECRET="${NOTICE_KEY_SECRET:-demo-only-secret-do-not-use-in-production-0123456789}"
export SCAN_CONFIG="${SCAN_CONFIG:-scripts/demo-policy.yaml}"
export SCAN_SENDER=smtp
export SMTP_URL="smtp://${smtp_addr}"
unset SCAN_REDIRECT_TO SCAN_ENVIRONMENT
now="${DEMO_NOW:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}"

echo "== build"
go build -o bin/scan ./cmd/scan
go build -o bin/seed ./tools/seed

echo "== scan migrate"
./bin/scan migrate 2>>"$logs"

echo "== seed ${SEED_N:-300} subscriptions around ${now}"
./bin/seed -n "${SEED_N:-300}" -now "$now"

echo "== scan run --sender smtp (Mailpit)"
summary="$(./bin/scan run --now "$now" 2>>"$logs")"
echo "$summary"
sent="$(jq -r .sent <<<"$summary")"

echo "== second pass: nothing is sent twice"
./bin/scan run --now "$now" 2>>"$logs"

total="$(curl -fsS "${ui}/api/v1/messages?limit=1" | jq -r .total)"
if [[ "$total" != "$sent" ]]; then
  echo "demo-mail: Mailpit holds ${total} messages, the pass sent ${sent}" >&2
  exit 1
fi
echo "== Mailpit holds ${total} messages, one per notice sent"

echo
echo "Mailpit web UI:  ${ui}/"
# A Mailpit built by `go install` has no web UI bundle (the release
# binaries and Docker image do: it is built with npm). Its server-side
# views and API work either way.
if ! curl -fsS -o /dev/null "${ui}/dist/app.js" 2>/dev/null; then
  echo "  (this go-installed Mailpit lacks the web UI bundle, which is built with npm;"
  echo "   a Mailpit release binary or the axllent/mailpit image has it. The rendered"
  echo "   notices are served anyway:)"
fi
echo "Rendered notices (HTML | text), first five:"
curl -fsS "${ui}/api/v1/messages?limit=5" |
  jq -r --arg ui "$ui" '.messages[] | "  \(.Subject)\n    \($ui)/view/\(.ID).html\n    \($ui)/view/\(.ID).txt"'
echo "All messages as JSON: ${ui}/api/v1/messages"
echo "Logs of the scan commands: ${logs}"

wait_mode="${DEMO_MAIL_WAIT:-}"
if [[ -z "$wait_mode" ]]; then
  if [[ -t 0 && -t 1 ]]; then wait_mode=1; else wait_mode=0; fi
fi
if [[ "$wait_mode" == 1 ]]; then
  echo
  echo "Mailpit keeps running; press Ctrl-C to stop it."
  wait "$mailpit_pid" || true
fi
