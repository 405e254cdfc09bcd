package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"time"

	"scan/internal/ledger"
	"scan/internal/metrics"
	"scan/internal/policy"
)

// cmdUndelivered is `scan undelivered`: the notices that reached the
// customer by no channel, for whoever calls them. No addresses: the
// ledger holds none. With PUSHGATEWAY_URL it also pushes their count by
// reason (scan_undelivered_notices), which ScanUndeliveredGrowing watches.
func cmdUndelivered(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "undelivered", "[--since D] [--format json|csv] [--limit N]")
	since := fs.String("since", "30d", "notices whose rows last changed within this long, e.g. 7d or 36h")
	format := fs.String("format", "json", "json (one object a line) or csv (with a header)")
	limit := fs.Int("limit", 100000, "print at most N, oldest first")
	if err := parseNoArgs(fs, args, ""); err != nil {
		return err
	}
	d, err := policy.ParseDuration(*since)
	if err != nil || d <= 0 {
		return usagef("--since", "%q is not a positive duration (e.g. 30d, 36h)", *since)
	}
	if *format != "json" && *format != "csv" {
		return usagef("--format", "%q: use json or csv", *format)
	}
	if *limit < 1 {
		return usagef("--limit", "must be at least 1")
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	now := e.clockNow().UTC()
	list, err := ledger.Undelivered(ctx, db, now.Add(-d), now, *limit)
	if err != nil {
		return err
	}
	if gw := e.getenv("PUSHGATEWAY_URL"); gw != "" {
		byReason := map[string]int{}
		for _, u := range list {
			byReason[u.Reason]++
		}
		if err := metrics.PushUndelivered(ctx, gw, nil, ledger.UndeliveredReasons, byReason); err != nil {
			return err
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		for _, u := range list {
			if err := enc.Encode(u); err != nil {
				return err
			}
		}
		return nil
	}
	w := csv.NewWriter(e.stdout)
	_ = w.Write([]string{"subscription_id", "kind", "period_start", "revision", "channels", "reason", "at"})
	for _, u := range list {
		_ = w.Write([]string{u.SubscriptionID, u.Kind, u.PeriodStart, strconv.Itoa(u.Revision), u.Channels, u.Reason, u.At.UTC().Format(time.RFC3339)})
	}
	w.Flush()
	return w.Error()
}
