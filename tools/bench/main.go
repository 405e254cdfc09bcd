// Command bench measures `scan run` end to end against a throwaway,
// durable PostgreSQL (fsync and synchronous_commit on) and prints each
// figure beside its baseline measured in the same run:
//
//	make bench                  # N = 200000
//	BENCH_N=1000000 make bench  # N = 1M
//	bin/bench -scan bin/scan [-n N] [-latency-n 20000] [-batches 1000,5000] [-work DIR]
//
// It seeds N due subscriptions plus N/2 not yet due (one INSERT ... SELECT
// generate_series), then runs bin/scan as a child process so that its
// wall time and peak RSS (getrusage ru_maxrss) are the process's own:
//
//   - first pass into an outbox on tmpfs, notices/s, against one set-based
//     INSERT ... SELECT ... ON CONFLICT DO NOTHING of the same rows (keys,
//     Message-IDs and cancellation tokens hashed in SQL with pgcrypto's
//     hmac) plus one UPDATE marking them sent, into a copy of the ledger
//     with all its indexes;
//   - the nightly re-run that finds nothing new, seconds, against one
//     anti-join count(*) plus the start-up of `scan run` on an empty source;
//   - a pass through an SMTP sink (in this process, on loopback) that takes
//     5 ms per message, against the ideal n x 5 ms / concurrency;
//   - a rate-limited pass over domains with different rates, against the
//     ideal max over domains of n_d / r_d;
//   - a skewed backlog: a slow domain's backlog ahead of a fast domain in
//     source order, the fast domain's time against its own pace n_f / r_f;
//   - latency-api: the http and ses senders against an HTTPS stand-in (in
//     this process) that answers in 50 ms, trusted through SSL_CERT_FILE
//     and AWS_CA_BUNDLE, at concurrency 64 and 256: notices/s against the
//     ideal concurrency / latency, TLS connections opened, peak RSS, and
//     a CPU profile of the pass at the highest concurrency.
//
// A CPU profile of the first pass is written to the work directory
// (SCAN_CPUPROFILE) and its top entries printed. docs/BENCHMARKS.md
// records the figures and how to read them.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/lib/pq"

	"scan/internal/devpg"
	"scan/sql/reference"
)

// Statements of the bench (its own fixtures and baselines; the scan's SQL
// lives in internal/ledger and internal/scan).
const (
	// DatabaseCreate creates one scenario's database.
	DatabaseCreate = `CREATE DATABASE %s`
	// SubscriptionSeedMix inserts $1 subscriptions, ids bench_000000001...:
	// every third one renews beyond the window (not yet due), the others
	// inside the default window (25h..72h after $2). Recipients spread
	// over 20 domains.
	SubscriptionSeedMix = `
INSERT INTO subscriptions (id, email, status, renews_at, period_start, jurisdiction, notice_revision, name, plan)
SELECT 'bench_' || lpad(g::text, 9, '0'),
       'user' || g || '@d' || (g % 20) || '.example',
       'active',
       r.at, r.at::date, NULL, 0, 'Customer ' || g, 'Pro'
FROM generate_series(1, $1::int) g
CROSS JOIN LATERAL (SELECT CASE WHEN g % 3 = 0
        THEN $2::timestamptz + interval '4 days' + (g % 1000) * interval '1 minute'
        ELSE $2::timestamptz + interval '25 hours' + (g % 2820) * interval '1 minute' END AS at) r`
	// SubscriptionSeedDomains inserts, for each domain $1[i], $2[i] due
	// subscriptions, their ids interleaved in proportion (as real ids are
	// not grouped by domain), so every claim batch holds every domain.
	SubscriptionSeedDomains = `
INSERT INTO subscriptions (id, email, status, renews_at, period_start, notice_revision)
SELECT 'r_' || to_char(g::numeric / d.n, 'FM0.000000000') || '_' || d.i, 'user' || g || '@' || d.name, 'active',
       $3::timestamptz + interval '25 hours' + (g % 2820) * interval '1 minute',
       ($3::timestamptz + interval '25 hours' + (g % 2820) * interval '1 minute')::date, 0
FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS d(name, n, i)
CROSS JOIN LATERAL generate_series(1, d.n) g`
	// SubscriptionAnalyze refreshes the planner's statistics after seeding.
	SubscriptionAnalyze = `VACUUM ANALYZE subscriptions`
	// SubscriptionEmptyCreate is an empty source, to time the start-up of
	// a pass that has nothing to read.
	SubscriptionEmptyCreate = `CREATE TABLE bench_empty (LIKE subscriptions INCLUDING ALL)`

	// BaselineSetup creates the baseline's copy of the ledger: the same
	// columns, constraints and indexes, empty.
	BaselineSetup = `CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE TABLE bench_ledger (LIKE notice_ledger INCLUDING ALL)`
	// BaselineClaim is PostgreSQL's own ceiling for a first pass: every due
	// row claimed by one set-based statement, keys hashed in SQL exactly as
	// package notice derives them (HMAC-SHA256 over id|date|kind|revision,
	// lower-case hex), the cancellation token as well.
	// $1 kind, $2 claimed_at, $3 window low (exclusive), $4 window high,
	// $5 secret, $6 close_before.
	BaselineClaim = `
INSERT INTO bench_ledger (notice_key, subscription_id, kind, period_start, revision, state,
    claimed_at, run_id, renews_at, window_closes_at, domain, message_id, cancel_token, attempts)
SELECT k.key, s.id, $1, s.period_start, s.notice_revision, 'claimed',
       $2, 'baseline', s.renews_at, s.renews_at - $6::interval, lower(split_part(s.email, '@', 2)),
       left(k.key, 32) || '@notices.example.com',
       left(encode(hmac('cancel|' || k.key0, $5, 'sha256'), 'hex'), 32), 0
FROM subscriptions s
CROSS JOIN LATERAL (SELECT
    encode(hmac(s.id || '|' || to_char(s.period_start, 'YYYY-MM-DD') || '|' || $1 || '|' || s.notice_revision, $5, 'sha256'), 'hex') AS key,
    encode(hmac(s.id || '|' || to_char(s.period_start, 'YYYY-MM-DD') || '|' || $1 || '|0', $5, 'sha256'), 'hex') AS key0) k
WHERE s.status = 'active' AND s.renews_at > $3 AND s.renews_at <= $4
ON CONFLICT DO NOTHING`
	// BaselineMarkSent records every baseline claim as sent in one UPDATE.
	BaselineMarkSent = `
UPDATE bench_ledger
SET state = 'sent', sent_at = $1, provider_id = 'outbox:' || notice_key || '.eml',
    attempts = attempts + 1, updated_at = $1
WHERE state = 'claimed' AND run_id = 'baseline'`
	// BaselineCheckKey compares one baseline key with the key the pass
	// stored for the same subscription: the SQL hashing is the same one.
	BaselineCheckKey = `
SELECT count(*) FROM bench_ledger b JOIN notice_ledger l USING (notice_key)`
	// BaselineDrop removes the baseline's table.
	BaselineDrop = `DROP TABLE bench_ledger`
	// BaselineAntiJoin is the least a re-run must do: count the due
	// subscriptions that have no ledger row.
	// $1 kind, $2 window low (exclusive), $3 window high.
	BaselineAntiJoin = `
SELECT count(*) FROM subscriptions s
WHERE s.status = 'active' AND s.renews_at > $2 AND s.renews_at <= $3
  AND NOT EXISTS (SELECT 1 FROM notice_ledger l
                  WHERE l.subscription_id = s.id AND l.kind = $1
                    AND l.period_start = s.period_start AND l.revision = s.notice_revision)`
	// LedgerTruncate empties the ledger between scenarios and rounds, with
	// the messages the outcomes kept (notice_message, where the binary's
	// schema has it): left behind, the next round's outcomes for the same
	// keys meet their earlier rows, ON CONFLICT DO NOTHING writes nothing,
	// and the round measures a pass without the message storage (the
	// ledger figure read 1,873 B a notice that way, against about 2,430 B
	// with it).
	LedgerTruncate = `DO $$ BEGIN
    TRUNCATE notice_ledger CASCADE;
    IF to_regclass('notice_message') IS NOT NULL THEN TRUNCATE notice_message; END IF;
END $$`
	// ServerVersion is the server's version string.
	ServerVersion = `SHOW server_version`
)

const (
	kind        = "renewal_notice_t72"
	openBefore  = 72 * time.Hour
	closeBefore = 24 * time.Hour
	secret      = "bench-only-secret-0123456789abcdef0123456789abcdef"
)

// policyHead is the part of the benchmarks' policies before their rates:
// the kind the seeded rows are due for.
const policyHead = `schedule: "0 2 * * *"
message_id_domain: notices.example.com
from: "Example Box <notices@example.com>"
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
`

// policyThroughput lets the first pass run as fast as the pipeline goes:
// buckets far above what the machine can do.
const policyThroughput = policyHead + `rate:
  default: {per_second: 10000000, burst: 10000000}
  global: {per_second: 10000000, burst: 10000000}
concurrency: 16
`

// rateDomain is one domain of the rate-limited scenario.
type rateDomain struct {
	name string
	n    int
	rate float64
}

// rateBurst is each domain's burst: small beside n_d (it saves the pass at
// most rateBurst/r_d, 1% of the ideal), and at least 2 so that a scheduler
// woken a little late takes the token that accrued meanwhile instead of
// losing that time for good (with burst 1 the lateness accumulates).
const rateBurst = 5

var rateDomains = []rateDomain{
	{"fast.example", 2400, 300}, // 8 s
	{"mid.example", 1000, 100},  // 10 s: the slowest, so the ideal
	{"slow.example", 300, 50},   // 6 s
}

// policyRate is the policy of a pass over domains with their own rates.
func policyRate(domains []rateDomain) string {
	var b strings.Builder
	b.WriteString(policyHead + `rate:
  default: {per_second: 10000, burst: 1000}
  global: {per_second: 100000, burst: 1000}
  domains:
`)
	for _, d := range domains {
		fmt.Fprintf(&b, "    %s: {per_second: %g, burst: %d}\n", d.name, d.rate, rateBurst)
	}
	b.WriteString("concurrency: 16\n")
	return b.String()
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type config struct {
	scan string
	// scanNoProof is a scan binary built with -tags noproof (no proof of
	// notice kept), the proof scenario's baseline; skipped when empty.
	scanNoProof  string
	proofN       int
	n            int
	latencyN     int
	suppressionN int
	// suppressionRounds is how many alternated pairs (empty list, 1M
	// list) the suppression scenario runs.
	suppressionRounds int
	// suppressionPrevious adds, to each round, a pass on the 1M list with
	// NOTICE_KEY_SECRET_PREVIOUS set (issue 38).
	suppressionPrevious bool
	channelsN           int
	// statementStats logs every statement's CPU (log_statement_stats)
	// during the throughput scenario's first pass and prints the sums by
	// statement.
	statementStats bool
	batches        []int
	work           string
	keep           bool
	only           string
	scanBefore     string
	latency        time.Duration
	concurrency    int

	apiN           int
	apiLatency     time.Duration
	apiConcurrency []int

	dueN           int
	statusN        int
	receiveN       int
	receiveSNS     int
	receiveClients int
	receiveQuar    int
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	defN := 200000
	if v := os.Getenv("BENCH_N"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 3 {
			return fmt.Errorf("BENCH_N=%q is not a number of subscriptions", v)
		}
		defN = n
	}
	fs.StringVar(&c.scan, "scan", "bin/scan", "the scan binary to run")
	fs.StringVar(&c.scanBefore, "scan-before", "", "an older scan binary the durable scenario compares with (built from an earlier commit)")
	fs.IntVar(&c.n, "n", defN, "due subscriptions of the throughput scenario (env BENCH_N); N/2 more are not yet due")
	fs.IntVar(&c.latencyN, "latency-n", 20000, "due subscriptions of the fixed-latency scenario")
	defBatches := "1000"
	if v := os.Getenv("BENCH_BATCHES"); v != "" {
		defBatches = v
	}
	batches := fs.String("batches", defBatches, "claim batch sizes of the first pass to compare, e.g. 1000,5000 (env BENCH_BATCHES); the first is also used for the other passes")
	fs.StringVar(&c.work, "work", "", "work directory for policies, logs and the profile (default a new one in /dev/shm)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory")
	fs.StringVar(&c.only, "only", "", "run only these scenarios, comma-separated: throughput, latency, rate, skewed, ledger, latency-api, due, suppression, channels, receive, durable, status, proof, proof1m, evidence")
	fs.IntVar(&c.suppressionRounds, "suppression-rounds", 4, "alternated pairs of first passes (empty list, 1M list) the suppression scenario runs; it reports each pair's ratio and their median")
	fs.StringVar(&c.scanNoProof, "scan-noproof", "", "a scan binary built with -tags noproof, the proof scenario's baseline (first pass without the kept messages)")
	fs.IntVar(&c.proofN, "proof-n", 50000, "due subscriptions of the proof scenario")
	fs.BoolVar(&c.statementStats, "statement-stats", false, "the throughput scenario (its first pass and its re-run; the suppression scenario in its last pair) logs PostgreSQL's CPU of every statement (log_statement_stats, which costs the pass a few percent) and prints the sums by statement and phase")
	fs.BoolVar(&c.suppressionPrevious, "suppression-previous", false, "the suppression scenario also runs, each round, the 1M-list pass with NOTICE_KEY_SECRET_PREVIOUS set (one previous secret) and reports its cost over the same pass without")
	fs.IntVar(&c.suppressionN, "suppression-n", 50000, "due subscriptions of the suppression scenario (a first pass with an empty and with a 1M-entry suppression list)")
	fs.IntVar(&c.channelsN, "channels-n", 600, "email notices of the channels scenario, beside as many that go by sms only")
	fs.DurationVar(&c.latency, "latency", 5*time.Millisecond, "the SMTP sink's time per message in the fixed-latency scenario")
	fs.IntVar(&c.concurrency, "concurrency", 8, "policy concurrency (SMTP connections) of the fixed-latency scenario")
	fs.IntVar(&c.apiN, "api-n", 20000, "due subscriptions of each latency-api pass")
	fs.IntVar(&c.dueN, "due-n", 60000, "subscriptions of the due scenario (two in three due)")
	fs.IntVar(&c.statusN, "status-n", 10_000_000, "past ledger rows of the status scenario (scan status on a ledger of this size)")
	fs.DurationVar(&c.apiLatency, "api-latency", 50*time.Millisecond, "the API stand-in's time per request in the latency-api scenario")
	fs.IntVar(&c.receiveN, "receive-n", 50000, "SendGrid events of the receive scenario (in batches of 500)")
	fs.IntVar(&c.receiveSNS, "receive-sns", 5000, "single SNS notifications of the receive scenario")
	fs.IntVar(&c.receiveQuar, "receive-quarantine", 0, "more claims left in quarantine beside the receive scenario's SNS phase (which nothing settles)")
	fs.IntVar(&c.receiveClients, "receive-clients", 8, "concurrent posters of the receive scenario, and scan receive's --max-in-flight")
	apiConc := fs.String("api-concurrency", "64,256", "policy concurrencies of the latency-api scenario, comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, s := range strings.Split(*apiConc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("-api-concurrency: %q is not a concurrency between 1 and 1024", s)
		}
		c.apiConcurrency = append(c.apiConcurrency, n)
	}
	for _, s := range strings.Split(*batches, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || b < 1 || b > 10000 {
			return fmt.Errorf("-batches: %q is not a batch size between 1 and 10000", s)
		}
		c.batches = append(c.batches, b)
	}
	scanBin, err := filepath.Abs(c.scan)
	if err != nil {
		return err
	}
	c.scan = scanBin
	if c.scanBefore != "" {
		if c.scanBefore, err = filepath.Abs(c.scanBefore); err != nil {
			return err
		}
	}
	if c.scanNoProof != "" {
		if c.scanNoProof, err = filepath.Abs(c.scanNoProof); err != nil {
			return err
		}
	}
	if _, err := os.Stat(c.scan); err != nil {
		return fmt.Errorf("scan binary: %w (build it with: go build -o bin/scan ./cmd/scan)", err)
	}
	if c.work == "" {
		base := "/dev/shm"
		if st, err := os.Stat(base); err != nil || !st.IsDir() {
			base = os.TempDir()
		}
		c.work, err = os.MkdirTemp(base, "scan-bench-")
		if err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	if !c.keep {
		defer os.RemoveAll(c.work)
	}

	fmt.Fprintf(stderr, "bench: starting a durable PostgreSQL (fsync, synchronous_commit on)\n")
	srv, err := devpg.Start(ctx, devpg.Config{Durable: true})
	if err != nil {
		return err
	}
	defer srv.Stop()
	b := &bench{cfg: c, srv: srv, out: stdout, log: stderr, now: time.Now().UTC().Truncate(time.Second)}
	return b.all(ctx)
}

type bench struct {
	cfg  config
	srv  *devpg.Server
	out  io.Writer
	log  io.Writer
	now  time.Time
	rows []figure
	load string // load average when the bench began
}

// figure is one line of the report.
type figure struct {
	name, value, baseline, ratio, target string
}

func (b *bench) add(f figure) {
	b.rows = append(b.rows, f)
	fmt.Fprintf(b.log, "bench: %s: %s (baseline %s; %s; target %s)\n", f.name, f.value, f.baseline, f.ratio, f.target)
}

func (b *bench) dsn(db string) string {
	return devpg.KeywordDSN(map[string]string{"host": b.srv.Dir(), "port": strconv.Itoa(devpg.Port), "user": devpg.Superuser, "dbname": db, "sslmode": "disable"})
}

// database creates a scenario's database with the ledger and the
// reference subscriptions table, and returns a connection to it.
// seedMix fills db's subscriptions with total rows of the usual mix
// around now (SubscriptionSeedMix), then analyzes them as autovacuum
// would, so that every scenario's planner sees the table's size.
func (b *bench) seedMix(ctx context.Context, db *sql.DB, total int) error {
	if _, err := db.ExecContext(ctx, SubscriptionSeedMix, total, b.now); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	_, err := db.ExecContext(ctx, SubscriptionAnalyze)
	return err
}

func (b *bench) database(ctx context.Context, name string) (*sql.DB, error) {
	admin, err := sql.Open("postgres", b.dsn("postgres"))
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, fmt.Sprintf(DatabaseCreate, name)); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	db, err := sql.Open("postgres", b.dsn(name))
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, reference.Subscriptions); err != nil {
		db.Close()
		return nil, fmt.Errorf("create subscriptions: %w", err)
	}
	if _, err := b.scan(ctx, name, "migrate", nil, nil); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// result is one finished child process.
type result struct {
	wall   time.Duration
	cpu    time.Duration // the scan process's user + system time
	pgCPU  time.Duration // PostgreSQL's, over the same interval
	maxRSS int64         // KiB
	// mem is what the peak was made of, sampled from /proc while the
	// process ran.
	mem     memPeak
	summary map[string]any
}

func (r result) int(name string) int {
	v, _ := r.summary[name].(float64)
	return int(v)
}

// goRuntimeEnv is the Go runtime's settings in bench's own environment
// (GOGC, GOMEMLIMIT, GODEBUG, GOMAXPROCS), passed on to bin/scan so a
// figure can be measured under them.
func goRuntimeEnv() []string {
	var env []string
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GODEBUG", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// scan runs bin/scan with args against database db; extra is added to the
// environment. A non-zero exit is an error that carries the log's tail.
func (b *bench) scan(ctx context.Context, db, cmd string, args []string, extra []string) (result, error) {
	logPath := filepath.Join(b.cfg.work, "scan.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return result{}, err
	}
	defer logf.Close()
	var out strings.Builder
	c := exec.CommandContext(ctx, b.cfg.scan, append([]string{cmd}, args...)...)
	c.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + b.dsn(db),
		"NOTICE_KEY_SECRET=" + secret,
		"LOG_LEVEL=warn",
	}, extra...)
	c.Env = append(c.Env, goRuntimeEnv()...)
	c.Stdout = &out
	c.Stderr = logf
	pg0 := b.pgCPU()
	start := time.Now()
	var mem memPeak
	if err = c.Start(); err == nil {
		stop := sampleMemory(c.Process.Pid, start, &mem)
		err = c.Wait()
		stop()
	}
	r := result{wall: time.Since(start), pgCPU: b.pgCPU() - pg0, mem: mem}
	if c.ProcessState != nil {
		r.cpu = c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = ru.Maxrss // KiB on Linux
		}
	}
	if err != nil {
		return r, fmt.Errorf("scan %s %s: %w (log: %s)", cmd, strings.Join(args, " "), err, logPath)
	}
	if cmd == "run" {
		if err := json.Unmarshal([]byte(out.String()), &r.summary); err != nil {
			return r, fmt.Errorf("scan run printed %q: %w", out.String(), err)
		}
	}
	return r, nil
}

// pgCPU returns the CPU time PostgreSQL has used so far: the postmaster's
// own and its reaped children's (backends that exited), plus its live
// children's. A measure of work that the machine's other load does not
// inflate as much as wall time.
func (b *bench) pgCPU() time.Duration {
	pm := b.srv.Pid()
	ticks := procTicks(pm, true)
	if kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pm, pm)); err == nil {
		for _, f := range strings.Fields(string(kids)) {
			if pid, err := strconv.Atoi(f); err == nil {
				ticks += procTicks(pid, false)
			}
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times on Linux.
const clockTicks = 100

// procTicks reads utime + stime (and cutime + cstime) of a process.
func procTicks(pid int, withChildren bool) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(raw[i+1:]))
	// After the command: state is f[0]; utime, stime, cutime, cstime are
	// fields 14-17 of the line, f[11]..f[14].
	if len(f) < 15 {
		return 0
	}
	var t int64
	n := 2
	if withChildren {
		n = 4
	}
	for _, v := range f[11 : 11+n] {
		x, _ := strconv.ParseInt(v, 10, 64)
		t += x
	}
	return t
}

// loadAvg returns the first field of /proc/loadavg.
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(raw))[0]
}

func (b *bench) writePolicy(name, body string) (string, error) {
	p := filepath.Join(b.cfg.work, name)
	return p, os.WriteFile(p, []byte(body), 0o644)
}

func (b *bench) runArgs(batch int, extra ...string) []string {
	return append([]string{"--now", b.now.Format(time.RFC3339), "--batch-size", strconv.Itoa(batch)}, extra...)
}

func (b *bench) all(ctx context.Context) error {
	start := time.Now()
	b.load = loadAvg()
	for _, sc := range []struct {
		name string
		run  func(context.Context) error
	}{{"throughput", b.throughput}, {"latency", b.latency}, {"rate", b.rateLimited}, {"skewed", b.skewed}, {"ledger", b.ledgerScale}, {"latency-api", b.latencyAPI}, {"due", b.due}, {"suppression", b.suppression}, {"channels", b.channels}, {"receive", b.receiveScenario}, {"durable", b.durable}, {"status", b.statusScenario}, {"proof", b.proof}, {"proof1m", b.proof1m}, {"evidence", b.evidence}} {
		if b.cfg.only != "" && !strings.Contains(","+b.cfg.only+",", ","+sc.name+",") {
			continue
		}
		if err := sc.run(ctx); err != nil {
			return err
		}
	}
	b.report(ctx, time.Since(start))
	return nil
}

func (b *bench) throughput(ctx context.Context) error {
	n := b.cfg.n
	total, due := population(n)
	db, err := b.database(ctx, "bench_throughput")
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(b.log, "bench: seeding %d subscriptions (%d due)\n", total, due)
	t := time.Now()
	if err := b.seedMix(ctx, db, total); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, SubscriptionEmptyCreate); err != nil {
		return err
	}
	fmt.Fprintf(b.log, "bench: seeded in %s\n", time.Since(t).Round(time.Millisecond))
	lo, hi := b.now.Add(closeBefore), b.now.Add(openBefore)

	// Baseline: PostgreSQL alone.
	if _, err := db.ExecContext(ctx, BaselineSetup); err != nil {
		return fmt.Errorf("baseline setup: %w", err)
	}
	pg0 := b.pgCPU()
	t = time.Now()
	res, err := db.ExecContext(ctx, BaselineClaim, kind, b.now, lo, hi, secret, closeBefore.String())
	if err != nil {
		return fmt.Errorf("baseline claim: %w", err)
	}
	claimed, _ := res.RowsAffected()
	claimDur := time.Since(t)
	t = time.Now()
	if _, err := db.ExecContext(ctx, BaselineMarkSent, b.now); err != nil {
		return fmt.Errorf("baseline mark sent: %w", err)
	}
	markDur := time.Since(t)
	baseCPU := b.pgCPU() - pg0
	baseDur := claimDur + markDur
	baseRate := float64(claimed) / baseDur.Seconds()
	fmt.Fprintf(b.log, "bench: baseline: %d rows claimed in %s, marked sent in %s\n", claimed, claimDur.Round(time.Millisecond), markDur.Round(time.Millisecond))
	if int(claimed) != due {
		return fmt.Errorf("baseline claimed %d rows, want %d", claimed, due)
	}

	policy, err := b.writePolicy("throughput.yaml", policyThroughput)
	if err != nil {
		return err
	}
	outbox := filepath.Join(b.cfg.work, "outbox")
	env := []string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + outbox}

	// Start-up: a pass over an empty source.
	startup, err := b.scan(ctx, "bench_throughput", "run", b.runArgs(b.cfg.batches[0], "--source", "bench_empty"), env)
	if err != nil {
		return err
	}

	var first result
	for i := len(b.cfg.batches) - 1; i >= 0; i-- { // the default batch size last, so its ledger stays for the re-run
		batch := b.cfg.batches[i]
		if _, err := db.ExecContext(ctx, LedgerTruncate); err != nil {
			return err
		}
		if err := os.RemoveAll(outbox); err != nil {
			return err
		}
		extra := env
		prof := filepath.Join(b.cfg.work, "cpu.pprof")
		if i == 0 {
			extra = append(append([]string(nil), env...), "SCAN_CPUPROFILE="+prof)
		}
		fmt.Fprintf(b.log, "bench: first pass, %d notices, batch %d\n", due, batch)
		stats := b.cfg.statementStats && i == 0
		var logAt int64
		if stats {
			if logAt, err = b.statementStatsOn(ctx, db); err != nil {
				return err
			}
		}
		r, err := b.scan(ctx, "bench_throughput", "run", b.runArgs(batch), extra)
		if err != nil {
			return err
		}
		if stats {
			if err := b.statementStatsOff(ctx, db, logAt, due); err != nil {
				return err
			}
		}
		if r.int("sent") != due || r.int("minted") != due {
			return fmt.Errorf("first pass sent %d, minted %d; want %d", r.int("sent"), r.int("minted"), due)
		}
		rate := float64(due) / r.wall.Seconds()
		name := fmt.Sprintf("first pass, outbox on tmpfs, batch %d (N=%d)", batch, due)
		b.add(figure{name, fmt.Sprintf("%.0f notices/s (%.2f s; CPU: scan %.1f s + PostgreSQL %.1f s)", rate, r.wall.Seconds(), r.cpu.Seconds(), r.pgCPU.Seconds()),
			fmt.Sprintf("%.0f rows/s (claim %.2f s + mark sent %.2f s; CPU: PostgreSQL %.1f s)", baseRate, claimDur.Seconds(), markDur.Seconds(), baseCPU.Seconds()),
			fmt.Sprintf("%.2fx the baseline's time (CPU %.2fx)", r.wall.Seconds()/baseDur.Seconds(), (r.cpu+r.pgCPU).Seconds()/baseCPU.Seconds()), "at most 1.3x (issue 39)"})
		if i == 0 {
			first = r
			b.profile(ctx, prof, "the first pass")
			if goBin, err := exec.LookPath("go"); err == nil {
				if err := printSteps(ctx, b.out, goBin, b.cfg.scan, prof, due); err != nil {
					fmt.Fprintf(b.log, "bench: the pass's steps: %v\n", err)
				}
			}
		}
	}
	var same int
	if err := db.QueryRowContext(ctx, BaselineCheckKey).Scan(&same); err != nil {
		return err
	}
	if same != due {
		return fmt.Errorf("only %d of %d keys hashed in SQL equal the keys of the pass", same, due)
	}
	if _, err := db.ExecContext(ctx, BaselineDrop); err != nil {
		return err
	}

	// The re-run and its baseline.
	// The best of three, like the pass's own cache state after a pass.
	var left int
	anti := time.Duration(1<<63 - 1)
	for range 3 {
		t = time.Now()
		if err := db.QueryRowContext(ctx, BaselineAntiJoin, kind, lo, hi).Scan(&left); err != nil {
			return err
		}
		anti = min(anti, time.Since(t))
	}
	if left != 0 {
		return fmt.Errorf("anti-join found %d due rows without a ledger row after the first pass", left)
	}
	_ = os.RemoveAll(outbox)
	var logAt int64
	if b.cfg.statementStats {
		if logAt, err = b.statementStatsOn(ctx, db); err != nil {
			return err
		}
	}
	re, err := b.scan(ctx, "bench_throughput", "run", b.runArgs(b.cfg.batches[0]), env)
	if err != nil {
		return err
	}
	if b.cfg.statementStats {
		if err := b.statementStatsOffAs(ctx, db, logAt, due, "re-run"); err != nil {
			return err
		}
	}
	if re.int("minted") != 0 || re.int("suppressed") != due {
		return fmt.Errorf("re-run minted %d, suppressed %d; want 0, %d", re.int("minted"), re.int("suppressed"), due)
	}
	ideal := anti + startup.wall
	b.add(figure{fmt.Sprintf("re-run, nothing new (N=%d)", due), fmt.Sprintf("%.2f s (pass %.2f s)", re.wall.Seconds(), float64(re.int("duration_ms"))/1000),
		fmt.Sprintf("%.2f s (anti-join %.2f s + start-up %.2f s)", ideal.Seconds(), anti.Seconds(), startup.wall.Seconds()),
		fmt.Sprintf("%.2fx", re.wall.Seconds()/ideal.Seconds()), "within 3x"})
	b.add(figure{fmt.Sprintf("peak RSS, first pass (N=%d)", due), fmt.Sprintf("%.1f MiB (%s)", float64(first.maxRSS)/1024, first.mem),
		fmt.Sprintf("%.1f MiB (start-up on an empty source)", float64(startup.maxRSS)/1024), "", "under 64 MiB at 1M, flat in N"})
	b.add(figure{fmt.Sprintf("peak RSS, re-run (N=%d)", due), fmt.Sprintf("%.1f MiB", float64(re.maxRSS)/1024), "", "", "flat in N"})
	return nil
}

// profile prints the top of a pass's CPU profile; what names the pass.
func (b *bench) profile(ctx context.Context, path, what string) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(b.log, "bench: no go tool on PATH; the profile is in %s\n", path)
		return
	}
	out, err := exec.CommandContext(ctx, goBin, "tool", "pprof", "-top", "-nodecount=25", b.cfg.scan, path).CombinedOutput()
	if err != nil {
		fmt.Fprintf(b.log, "bench: pprof: %v\n%s", err, out)
		return
	}
	fmt.Fprintf(b.out, "CPU profile of %s (go tool pprof -top):\n%s\n", what, out)
	out, err = exec.CommandContext(ctx, goBin, "tool", "pprof", "-top", "-cum", "-nodecount=25", b.cfg.scan, path).CombinedOutput()
	if err == nil {
		fmt.Fprintf(b.out, "Cumulative (go tool pprof -top -cum):\n%s\n", out)
	}
}

// sink is an SMTP server that accepts every message after a fixed delay:
// each transaction takes the latency from MAIL to the final reply.
type sink struct {
	latency time.Duration
	count   atomic.Int64
	conns   atomic.Int64
	// served sums the time from MAIL to the reply to the message; gaps the
	// time from that reply to the connection's next MAIL (the client's own
	// time between two messages), both in nanoseconds.
	served, gaps, ngaps atomic.Int64
	// byDomain, when not nil, counts messages by recipient domain and
	// keeps the time of each domain's last one.
	mu       sync.Mutex
	byDomain map[string]*domainStat
}

type domainStat struct {
	n    int
	last time.Time
}

// serve starts the sink on a loopback port; stop closes it.
func (s *sink) serve() (ln net.Listener, stop func(), err error) {
	srv := smtp.NewServer(s)
	srv.Domain = "sink.localhost"
	srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
	srv.MaxRecipients = 1
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	go func() { _ = srv.Serve(ln) }()
	return ln, func() { _ = srv.Close() }, nil
}

func (s *sink) NewSession(*smtp.Conn) (smtp.Session, error) {
	s.conns.Add(1)
	return &sinkSession{s: s}, nil
}

type sinkSession struct {
	s           *sink
	mail, reply time.Time
	domain      string
}

func (ss *sinkSession) Mail(string, *smtp.MailOptions) error {
	ss.mail = time.Now()
	if !ss.reply.IsZero() {
		ss.s.gaps.Add(int64(ss.mail.Sub(ss.reply)))
		ss.s.ngaps.Add(1)
	}
	return nil
}
func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.domain = strings.ToLower(to[strings.LastIndexByte(to, '@')+1:])
	return nil
}
func (ss *sinkSession) Reset()        {}
func (ss *sinkSession) Logout() error { return nil }
func (ss *sinkSession) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	// The transaction, from MAIL to this reply, takes the sink's latency:
	// the exchange so far counts, as at a provider. The wait is a
	// nanosleep of this goroutine's thread, not time.Sleep: Go's timers
	// wake through epoll with millisecond resolution and overshoot a 5 ms
	// wait by half a millisecond on average, which would be the sink's
	// error, not the pass's. A spin would burn the CPU the pass runs on.
	if d := time.Until(ss.mail.Add(ss.s.latency)); d > 0 {
		ts := syscall.NsecToTimespec(int64(d))
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
	}
	ss.s.count.Add(1)
	ss.reply = time.Now()
	ss.s.served.Add(int64(ss.reply.Sub(ss.mail)))
	if ss.s.byDomain != nil {
		ss.s.mu.Lock()
		st := ss.s.byDomain[ss.domain]
		if st == nil {
			st = &domainStat{}
			ss.s.byDomain[ss.domain] = st
		}
		st.n++
		st.last = ss.reply
		ss.s.mu.Unlock()
	}
	return nil
}

// selfCPU returns the CPU time this process has used so far: the sink's,
// while a pass runs.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// population is how many subscriptions a scenario seeds for n due ones
// (every third renews beyond the window: N/2 more), and how many of them
// are due, at least n.
func population(n int) (total, due int) {
	total = n + n/2
	for total-total/3 < n {
		total++
	}
	return total, total - total/3
}

func (b *bench) latency(ctx context.Context) error {
	n := b.cfg.latencyN
	total, due := population(n)
	db, err := b.database(ctx, "bench_latency")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := b.seedMix(ctx, db, total); err != nil {
		return err
	}
	sk := &sink{latency: b.cfg.latency}
	ln, stop, err := sk.serve()
	if err != nil {
		return err
	}
	defer stop()
	policy, err := b.writePolicy("latency.yaml", strings.Replace(policyThroughput, "concurrency: 16", fmt.Sprintf("concurrency: %d", b.cfg.concurrency), 1))
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "bench: fixed-latency pass, %d notices, %s each, concurrency %d\n", due, b.cfg.latency, b.cfg.concurrency)
	sink0 := selfCPU()
	r, err := b.scan(ctx, "bench_latency", "run", b.runArgs(b.cfg.batches[0]),
		[]string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=smtp", "SMTP_URL=smtp://" + ln.Addr().String(), "SCAN_CPUPROFILE=" + os.Getenv("BENCH_LATENCY_PROFILE")})
	if err != nil {
		return err
	}
	sinkCPU := selfCPU() - sink0
	if r.int("sent") != due || int(sk.count.Load()) != due {
		return fmt.Errorf("fixed-latency pass sent %d, sink got %d; want %d", r.int("sent"), sk.count.Load(), due)
	}
	ideal := time.Duration(due) * b.cfg.latency / time.Duration(b.cfg.concurrency)
	b.add(figure{fmt.Sprintf("fixed latency %s, concurrency %d (N=%d)", b.cfg.latency, b.cfg.concurrency, due),
		fmt.Sprintf("%.2f s (pass %.2f s; %d SMTP connections; sink %.2f ms per message from MAIL to reply, client %.2f ms between reply and next MAIL; CPU: scan %.1f s, PostgreSQL %.1f s, sink %.1f s)",
			r.wall.Seconds(), float64(r.int("duration_ms"))/1000, sk.conns.Load(),
			float64(sk.served.Load())/float64(max(sk.count.Load(), 1))/1e6, float64(sk.gaps.Load())/float64(max(sk.ngaps.Load(), 1))/1e6,
			r.cpu.Seconds(), r.pgCPU.Seconds(), sinkCPU.Seconds()),
		fmt.Sprintf("%.2f s ideal (N x %s / %d)", ideal.Seconds(), b.cfg.latency, b.cfg.concurrency),
		fmt.Sprintf("+%.1f%%", (r.wall.Seconds()/ideal.Seconds()-1)*100), "within 15%"})
	// The sink cannot hold a transaction to exactly its latency on a busy
	// machine (it overshoots by what it waits for a CPU). Against the time
	// it really took per message, the figure is the pipeline's own cost.
	served := time.Duration(sk.served.Load() / max(sk.count.Load(), 1))
	idealServed := time.Duration(due) * served / time.Duration(b.cfg.concurrency)
	b.add(figure{fmt.Sprintf("the same pass against the sink's measured %.2f ms per message", float64(served)/1e6),
		fmt.Sprintf("%.2f s", r.wall.Seconds()),
		fmt.Sprintf("%.2f s ideal (N x %.2f ms / %d)", idealServed.Seconds(), float64(served)/1e6, b.cfg.concurrency),
		fmt.Sprintf("+%.1f%%", (r.wall.Seconds()/idealServed.Seconds()-1)*100), "(the pipeline's own overhead)"})
	return nil
}

func (b *bench) rateLimited(ctx context.Context) error {
	db, err := b.database(ctx, "bench_rate")
	if err != nil {
		return err
	}
	defer db.Close()
	var ideal time.Duration
	var parts []string
	total := 0
	var names []string
	var counts []int64
	for _, d := range rateDomains {
		names, counts = append(names, d.name), append(counts, int64(d.n))
	}
	if _, err := db.ExecContext(ctx, SubscriptionSeedDomains, pq.Array(names), pq.Array(counts), b.now); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	for _, d := range rateDomains {
		t := time.Duration(float64(d.n) / d.rate * float64(time.Second))
		ideal = max(ideal, t)
		total += d.n
		parts = append(parts, fmt.Sprintf("%s %d at %g/s", d.name, d.n, d.rate))
	}
	if _, err := db.ExecContext(ctx, SubscriptionAnalyze); err != nil {
		return err
	}
	policy, err := b.writePolicy("rate.yaml", policyRate(rateDomains))
	if err != nil {
		return err
	}
	outbox := filepath.Join(b.cfg.work, "outbox-rate")
	defer os.RemoveAll(outbox)
	fmt.Fprintf(b.log, "bench: rate-limited pass: %s\n", strings.Join(parts, ", "))
	r, err := b.scan(ctx, "bench_rate", "run", b.runArgs(b.cfg.batches[0]),
		[]string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + outbox})
	if err != nil {
		return err
	}
	if r.int("sent") != total {
		return fmt.Errorf("rate-limited pass sent %d, want %d", r.int("sent"), total)
	}
	b.add(figure{fmt.Sprintf("rate-limited, %s", strings.Join(parts, ", ")),
		fmt.Sprintf("%.2f s (pass %.2f s)", r.wall.Seconds(), float64(r.int("duration_ms"))/1000),
		fmt.Sprintf("%.2f s ideal (max n_d / r_d)", ideal.Seconds()),
		fmt.Sprintf("+%.1f%%", (r.wall.Seconds()/ideal.Seconds()-1)*100), "within 10%"})
	return nil
}

func (b *bench) report(ctx context.Context, took time.Duration) {
	var version string
	if db, err := sql.Open("postgres", b.dsn("postgres")); err == nil {
		_ = db.QueryRowContext(ctx, ServerVersion).Scan(&version)
		db.Close()
	}
	mem := "?"
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.Atoi(f[1]); err == nil {
					mem = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
				}
			}
		}
	}
	fmt.Fprintf(b.out, "scan bench, %s: %d CPUs, %s memory, PostgreSQL %s (durable: fsync and synchronous_commit on), %s; took %s; load average %s at the start, %s at the end\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), mem, version, runtime.Version(), took.Round(time.Second), b.load, loadAvg())
	fmt.Fprintln(b.out, "| figure | measured | baseline (same run) | ratio | target |")
	fmt.Fprintln(b.out, "|---|---|---|---|---|")
	for _, f := range b.rows {
		fmt.Fprintf(b.out, "| %s | %s | %s | %s | %s |\n", f.name, f.value, f.baseline, f.ratio, f.target)
	}
}
