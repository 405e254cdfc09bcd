// Command seed creates the reference subscriptions table
// (sql/reference/subscriptions.sql) in DATABASE_URL and fills it with N
// demo subscriptions whose notice windows, under the contract's sample policy
// (scripts/demo-policy.yaml, k8s/configmap.yaml), are mostly open at -now:
//
//	go run ./tools/seed [-n 3000] [-now RFC3339] [-seed 1] [-reset]
//
// The mix (shares of N, deterministic for a given -seed):
//
//	~80%  due: window open at now (72h..24h before renews_at; 30d..16d for US-CA)
//	 ~7%  not yet due (renews_at beyond the window)
//	 ~5%  window already closed, charge still ahead (recorded as missed)
//	 ~3%  not active (canceled, paused)
//	 ~3%  bad rows: no email, empty or broken addresses
//	 ~2%  active without renews_at (invalid)
//
// Recipients spread over gmail.com, GMail.COM (same bucket), yahoo.com,
// example.org, example.net and the IDN domain bücher.example; jurisdictions
// NULL, DE and US-CA.
//
// What the notice says (drawn from a second generator, so the mix above
// stays the same for a given -seed): an amount (9.99, 12.99 or 99.00; NULL
// for ~10%, ~5% in US-CA, whose policy requires it: invalid there), its
// currency (EUR in DE, USD in US-CA, else USD, GBP or EUR; a rare unknown
// XYZ: invalid), a monthly or yearly interval, a locale and time zone per
// jurisdiction (de-DE, de-AT, de with Europe/Berlin or Europe/Vienna;
// en-US with America/Los_Angeles; en, en-GB or fr-FR elsewhere; ~2%
// malformed or unknown: the defaults take their place), and for a quarter
// of the rows renewing more than 3 days ahead a free trial that converts
// at renews_at (trial_ends_at), the anchor of the demo policy's
// trial_ending kind. Ids are sub_000001...; existing ids are left alone, so
// running it twice adds nothing (use -reset to start over).
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/lib/pq" // the "postgres" driver

	"scan/sql/reference"
)

// Statements of the seed tool (demo data only; the scan's own SQL lives in
// internal/ledger and internal/scan).
const (
	// SubscriptionDrop removes the reference table, for -reset.
	SubscriptionDrop = `DROP TABLE IF EXISTS subscriptions`
	// SubscriptionStage creates a temporary table shaped like subscriptions
	// that COPY fills, so that existing ids can be skipped.
	SubscriptionStage = `CREATE TEMPORARY TABLE seed_subscriptions (LIKE subscriptions INCLUDING DEFAULTS) ON COMMIT DROP`
	// SubscriptionCopy streams the rows into the staging table.
	SubscriptionCopy = `COPY seed_subscriptions (id, email, status, renews_at, period_start, jurisdiction, notice_revision, name, plan,
	    amount, currency, billing_interval, billing_interval_count, locale, time_zone, trial_ends_at) FROM STDIN`
	// SubscriptionInsertStaged moves staged rows whose id is new.
	SubscriptionInsertStaged = `INSERT INTO subscriptions SELECT * FROM seed_subscriptions ON CONFLICT (id) DO NOTHING`
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

type row struct {
	id, status, name, plan string
	email, jurisdiction    sql.NullString
	renewsAt               sql.NullTime
	periodStart            sql.NullString
	revision               int
	says
}

// says is what the notice says: the optional columns.
type says struct {
	amount, currency, interval, locale, zone sql.NullString
	intervalCount                            sql.NullInt64
	trialEndsAt                              sql.NullTime
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 3000, "number of subscriptions")
	nowFlag := fs.String("now", "", "instant the windows are planned around, RFC3339 (default: the clock)")
	seed := fs.Uint64("seed", 1, "random seed; the same seed and -now give the same rows")
	reset := fs.Bool("reset", false, "drop the subscriptions table first")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *n < 0 {
		return fmt.Errorf("%w: -n must be >= 0", errUsage)
	}
	now := time.Now().UTC().Truncate(time.Second)
	if *nowFlag != "" {
		t, err := time.Parse(time.RFC3339, *nowFlag)
		if err != nil {
			return fmt.Errorf("%w: -now: %v", errUsage, err)
		}
		now = t.UTC()
	}
	dsn := getenv("DATABASE_URL")
	if dsn == "" {
		return fmt.Errorf("%w: DATABASE_URL is not set (run through: go run ./tools/devpg -- ...)", errUsage)
	}

	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if *reset {
		if _, err := db.ExecContext(ctx, SubscriptionDrop); err != nil {
			return fmt.Errorf("drop subscriptions: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, reference.Subscriptions); err != nil {
		return fmt.Errorf("create subscriptions: %w", err)
	}

	rows, mix := generate(*n, now, rand.New(rand.NewPCG(*seed, 0x5ca11ab1e)))
	content := rand.New(rand.NewPCG(*seed, 0xc0ffee))
	for i := range rows {
		rows[i].says = saysFor(rows[i], now, content)
	}
	inserted, err := load(ctx, db, rows)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seeded %d new subscriptions (of %d) around now=%s: due=%d not_yet_due=%d closed=%d inactive=%d bad_email=%d no_renews_at=%d\n",
		inserted, *n, now.Format(time.RFC3339), mix["due"], mix["not_yet_due"], mix["closed"], mix["inactive"], mix["bad_email"], mix["no_renews_at"])
	return nil
}

func load(ctx context.Context, db *sql.DB, rows []row) (int64, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if _, err := tx.ExecContext(ctx, SubscriptionStage); err != nil {
		return 0, fmt.Errorf("stage: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, SubscriptionCopy)
	if err != nil {
		return 0, fmt.Errorf("copy: %w", err)
	}
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r.id, r.email, r.status, r.renewsAt, r.periodStart, r.jurisdiction, r.revision, r.name, r.plan,
			r.amount, r.currency, r.interval, r.intervalCount, r.locale, r.zone, r.trialEndsAt); err != nil {
			return 0, fmt.Errorf("copy %s: %w", r.id, err)
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return 0, fmt.Errorf("copy: %w", err)
	}
	if err := stmt.Close(); err != nil {
		return 0, fmt.Errorf("copy: %w", err)
	}
	res, err := tx.ExecContext(ctx, SubscriptionInsertStaged)
	if err != nil {
		return 0, fmt.Errorf("insert: %w", err)
	}
	inserted, _ := res.RowsAffected()
	return inserted, tx.Commit()
}

var (
	domains = []struct {
		name   string
		weight int
	}{
		{"gmail.com", 30}, {"GMail.COM", 5}, {"yahoo.com", 20}, {"example.org", 25},
		{"example.net", 10}, {"bücher.example", 10},
	}
	badEmails = []sql.NullString{
		{}, // NULL
		{Valid: true, String: ""},
		{Valid: true, String: "not-an-email"},
		{Valid: true, String: "broken@"},
		{Valid: true, String: "@example.org"},
		{Valid: true, String: "two@@example.org"},
		{Valid: true, String: "space in@example.org"},
		{Valid: true, String: "header\r\nBcc: x@example.org"},
	}
	plans = []string{"basic", "pro", "family"}
)

// window returns the notice window of the sample policy for a jurisdiction,
// as (close, open) before renews_at.
func window(jurisdiction string) (closeBefore, openBefore time.Duration) {
	const day = 24 * time.Hour
	if jurisdiction == "US-CA" {
		return 16 * day, 30 * day
	}
	return 24 * time.Hour, 72 * time.Hour
}

// between returns a random instant in (now+lo, now+hi], to the minute.
func between(r *rand.Rand, now time.Time, lo, hi time.Duration) time.Time {
	span := int64((hi - lo) / time.Minute)
	return now.Add(lo + time.Duration(1+r.Int64N(span))*time.Minute)
}

func generate(n int, now time.Time, r *rand.Rand) ([]row, map[string]int) {
	totalWeight := 0
	for _, d := range domains {
		totalWeight += d.weight
	}
	mix := map[string]int{}
	rows := make([]row, 0, n)
	for i := 1; i <= n; i++ {
		rw := row{
			id:       fmt.Sprintf("sub_%06d", i),
			status:   "active",
			name:     fmt.Sprintf("Customer %d", i),
			plan:     plans[r.IntN(len(plans))],
			revision: 0,
		}
		switch p := r.IntN(100); {
		case p < 20:
			rw.jurisdiction = sql.NullString{Valid: true, String: "DE"}
		case p < 30:
			rw.jurisdiction = sql.NullString{Valid: true, String: "US-CA"}
		}
		if r.IntN(50) == 0 {
			rw.revision = 1
		}

		w, pick := r.IntN(totalWeight), domains[0].name
		for _, d := range domains {
			if w < d.weight {
				pick = d.name
				break
			}
			w -= d.weight
		}
		rw.email = sql.NullString{Valid: true, String: fmt.Sprintf("user%06d@%s", i, pick)}

		closeBefore, openBefore := window(rw.jurisdiction.String)
		var renews time.Time
		kind := "due"
		switch p := r.IntN(100); {
		case p < 80:
			renews = between(r, now, closeBefore, openBefore)
		case p < 87:
			kind = "not_yet_due"
			renews = between(r, now, openBefore, openBefore+60*24*time.Hour)
		case p < 92:
			kind = "closed"
			renews = between(r, now, time.Hour, closeBefore-time.Minute)
		case p < 95:
			kind = "inactive"
			rw.status = []string{"canceled", "paused"}[r.IntN(2)]
			renews = between(r, now, closeBefore, openBefore)
		case p < 98:
			kind = "bad_email"
			rw.email = badEmails[r.IntN(len(badEmails))]
			renews = between(r, now, closeBefore, openBefore)
		default:
			kind = "no_renews_at"
		}
		mix[kind]++
		if !renews.IsZero() {
			rw.renewsAt = sql.NullTime{Valid: true, Time: renews}
			rw.periodStart = sql.NullString{Valid: true, String: renews.UTC().Format(time.DateOnly)}
		}
		rows = append(rows, rw)
	}
	return rows, mix
}

// saysFor draws what row r's notice says.
func saysFor(r row, now time.Time, rnd *rand.Rand) says {
	str := func(v string) sql.NullString { return sql.NullString{Valid: true, String: v} }
	pick := func(vs ...string) sql.NullString { return str(vs[rnd.IntN(len(vs))]) }
	var s says
	j := r.jurisdiction.String
	if missing := rnd.IntN(100); (j == "US-CA" && missing >= 5) || (j != "US-CA" && missing >= 10) {
		s.amount = pick("9.99", "12.99", "99.00")
	}
	switch j {
	case "DE":
		s.currency = str("EUR")
		s.locale = pick("de-DE", "de-DE", "de-DE", "de-AT", "de")
		s.zone = str("Europe/Berlin")
		if s.locale.String == "de-AT" {
			s.zone = str("Europe/Vienna")
		}
	case "US-CA":
		s.currency, s.locale, s.zone = str("USD"), str("en-US"), str("America/Los_Angeles")
	default:
		s.currency = pick("USD", "GBP", "EUR")
		s.locale = pick("en", "en-GB", "fr-FR")
		s.zone = pick("UTC", "Europe/London", "Europe/Paris")
	}
	if rnd.IntN(200) == 0 {
		s.currency = str("XYZ") // not ISO 4217: invalid
	}
	if rnd.IntN(50) == 0 {
		s.locale = pick("klingon!", "xx-QQ") // the default locale takes its place
	}
	if rnd.IntN(50) == 0 {
		s.zone = str("Mars/Olympus_Mons") // the default zone takes its place
	}
	s.interval = pick("month", "month", "year")
	s.intervalCount = sql.NullInt64{Valid: true, Int64: 1}
	// A free trial that converts at the first charge, for a quarter of the
	// rows whose charge is more than 3 days ahead (the trial_ending window
	// closes 3 days before the trial ends: closer ones would only be missed).
	if r.renewsAt.Valid && r.renewsAt.Time.After(now.Add(3*24*time.Hour)) && rnd.IntN(4) == 0 {
		s.trialEndsAt = r.renewsAt
	}
	return s
}
