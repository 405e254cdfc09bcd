package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"scan/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestSeed(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	db := pgtest.Open(t, dsn)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return dsn
		}
		return ""
	}
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	args := []string{"-n", "1000", "-now", now.Format(time.RFC3339)}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, getenv, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "seeded 1000 new subscriptions") {
		t.Errorf("output %q", out.String())
	}
	// Again: nothing new.
	out.Reset()
	if err := run(context.Background(), args, getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "seeded 0 new subscriptions") {
		t.Errorf("second run: %q", out.String())
	}

	var c struct {
		Total, Due, NoEmail, Inactive, MixedCase, IDN, USCA, DE, NullJ int
	}
	// Due under the sample policy: 72h..24h before renews_at, 30d..16d for US-CA.
	err := db.Get(&c, `SELECT count(*) AS total,
	  count(*) FILTER (WHERE status = 'active' AND email LIKE '%@%.%' AND (
	    (jurisdiction IS DISTINCT FROM 'US-CA' AND renews_at > $1::timestamptz + interval '24 hours' AND renews_at <= $1::timestamptz + interval '72 hours') OR
	    (jurisdiction = 'US-CA' AND renews_at > $1::timestamptz + interval '16 days' AND renews_at <= $1::timestamptz + interval '30 days'))) AS due,
	  count(*) FILTER (WHERE email IS NULL) AS noemail,
	  count(*) FILTER (WHERE status <> 'active') AS inactive,
	  count(*) FILTER (WHERE email LIKE '%@GMail.COM') AS mixedcase,
	  count(*) FILTER (WHERE email LIKE '%@bücher.example') AS idn,
	  count(*) FILTER (WHERE jurisdiction = 'US-CA') AS usca,
	  count(*) FILTER (WHERE jurisdiction = 'DE') AS de,
	  count(*) FILTER (WHERE jurisdiction IS NULL) AS nullj
	FROM subscriptions`, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 1000 || c.Due < 700 || c.Due > 900 || c.NoEmail == 0 || c.Inactive == 0 ||
		c.MixedCase == 0 || c.IDN == 0 || c.USCA == 0 || c.DE == 0 || c.NullJ == 0 {
		t.Errorf("mix: %+v", c)
	}
	var periodMismatch int
	if err := db.Get(&periodMismatch, `SELECT count(*) FROM subscriptions WHERE period_start <> (renews_at AT TIME ZONE 'UTC')::date`); err != nil {
		t.Fatal(err)
	}
	if periodMismatch != 0 {
		t.Errorf("%d rows whose period_start is not the UTC date of renews_at", periodMismatch)
	}
}
