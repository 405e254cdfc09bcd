package main

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// SubscriptionSeedSkewed inserts, for each domain $1[i], $2[i] due
// subscriptions whose ids sort by domain in the order given: the first
// domain's backlog comes first in source order.
const SubscriptionSeedSkewed = `
INSERT INTO subscriptions (id, email, status, renews_at, period_start, notice_revision)
SELECT 'k_' || d.i || '_' || lpad(g::text, 7, '0'), 'user' || g || '@' || d.name, 'active',
       $3::timestamptz + interval '25 hours' + (g % 2820) * interval '1 minute',
       ($3::timestamptz + interval '25 hours' + (g % 2820) * interval '1 minute')::date, 0
FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS d(name, n, i)
CROSS JOIN LATERAL generate_series(1, d.n) g`

// skewedDomains: the catch-up after an outage, where a slow domain's
// backlog (a corporate customer's seats, or a tight gmail limit) stands
// first in source order, and a fast domain behind it.
var skewedDomains = []rateDomain{
	{"slow.example", 4000, 20},  // 200 s: cut by the time budget
	{"fast.example", 1200, 400}, // 3 s
}

// skewed runs a pass over skewedDomains through an SMTP sink that answers
// at once, with a time budget well short of the slow backlog, and reports
// when the fast domain's last message arrived against its own pace, and
// the slow domain's rate against its bucket.
func (b *bench) skewed(ctx context.Context) error {
	db, err := b.database(ctx, "bench_skewed")
	if err != nil {
		return err
	}
	defer db.Close()
	var names []string
	var counts []int64
	for _, d := range skewedDomains {
		names, counts = append(names, d.name), append(counts, int64(d.n))
	}
	if _, err := db.ExecContext(ctx, SubscriptionSeedSkewed, pq.Array(names), pq.Array(counts), b.now); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if _, err := db.ExecContext(ctx, SubscriptionAnalyze); err != nil {
		return err
	}
	policy, err := b.writePolicy("skewed.yaml", policyRate(skewedDomains))
	if err != nil {
		return err
	}
	sk := &sink{byDomain: map[string]*domainStat{}}
	ln, stop, err := sk.serve()
	if err != nil {
		return err
	}
	defer stop()

	slow, fast := skewedDomains[0], skewedDomains[1]
	fastIdeal := time.Duration(float64(fast.n-rateBurst) / fast.rate * float64(time.Second))
	budget := (3*fastIdeal + 2*time.Second).Round(time.Second)
	fmt.Fprintf(b.log, "bench: skewed backlog: %s %d at %g/s ahead of %s %d at %g/s, budget %s\n",
		slow.name, slow.n, slow.rate, fast.name, fast.n, fast.rate, budget)
	start := time.Now()
	r, err := b.scan(ctx, "bench_skewed", "run", b.runArgs(b.cfg.batches[0], "--max-duration", budget.String()),
		[]string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=smtp", "SMTP_URL=smtp://" + ln.Addr().String()})
	if err != nil {
		return err
	}
	sk.mu.Lock()
	fs, ss := sk.byDomain[fast.name], sk.byDomain[slow.name]
	sk.mu.Unlock()
	if fs == nil || fs.n != fast.n || ss == nil {
		return fmt.Errorf("skewed pass: the sink got %+v; want all %d of %s", sk.byDomain, fast.n, fast.name)
	}
	fastTook := fs.last.Sub(start)
	slowTook := ss.last.Sub(start)
	b.add(figure{fmt.Sprintf("skewed backlog: %s %d at %g/s ahead of %s %d at %g/s in source order, budget %s",
		slow.name, slow.n, slow.rate, fast.name, fast.n, fast.rate, budget),
		fmt.Sprintf("%s done in %.2f s; %s %d in %.2f s (%.1f/s); deferred %d; every one of the %d claimed sent",
			fast.name, fastTook.Seconds(), slow.name, ss.n, slowTook.Seconds(), float64(ss.n)/slowTook.Seconds(),
			r.int("deferred"), r.int("minted")),
		fmt.Sprintf("%.2f s ideal for %s alone ((n_f - burst) / r_f)", fastIdeal.Seconds(), fast.name),
		fmt.Sprintf("%.2fx", fastTook.Seconds()/fastIdeal.Seconds()), "within 1.25x; slow domain at its rate"})
	if r.int("sent") != r.int("minted") || r.int("quarantine") != 0 {
		return fmt.Errorf("skewed pass: summary %v: a claim was left unsent", r.summary)
	}
	return nil
}
