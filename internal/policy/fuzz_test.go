package policy_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"scan/internal/address"
	"scan/internal/notice"
	"scan/internal/pace"
	"scan/internal/policy"
)

// FuzzParse checks that Parse never panics and that it either refuses a
// policy with a one-line *policy.Error naming a field, or returns one that
// can be met: every window opens before it closes, lies inside its
// jurisdiction's legal lead and is at least as wide as the schedule's
// longest gap; every rate is a finite positive number with a burst of at
// least one, keyed by a domain in lower-case ASCII. The seed corpus is in
// testdata/fuzz/FuzzParse; `go test` runs it, `make fuzz` explores.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"schedule: \"0 2 * * *\"\nnotices:\n  - kind: renewal_notice_t72\n    open_before: 72h\n    close_before: 24h\n",
		"rate: {default: {per_second: .inf, burst: 1}}",
		"concurrency: 0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := policy.Parse(strings.NewReader(in))
		if err != nil {
			var pe *policy.Error
			if !errors.As(err, &pe) || pe.Field == "" {
				t.Fatalf("Parse error %v (%T) is not a *policy.Error with a field", err, err)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("Parse error is not one line: %q", err)
			}
			return
		}
		if err := p.Validate(time.Now()); err != nil {
			t.Fatalf("a parsed policy does not validate again: %v", err)
		}
		if len(p.Notices) == 0 {
			t.Fatal("no notice kind")
		}
		if _, err := policy.ParseSchedule(p.Schedule); err != nil {
			t.Fatalf("schedule %q: %v", p.Schedule, err)
		}
		gap, err := policy.MaxGap(p.Schedule, time.Now())
		if err != nil {
			t.Fatalf("schedule %q: %v", p.Schedule, err)
		}
		check := func(where string, k policy.Kind, j string, w policy.Window) {
			open, closeAt := time.Duration(w.OpenBefore), time.Duration(w.CloseBefore)
			if closeAt < 0 || open <= closeAt {
				t.Fatalf("%s: window [%v, %v] is empty or negative", where, closeAt, open)
			}
			if open-closeAt < gap {
				t.Fatalf("%s: window %v narrower than the schedule's gap %v", where, open-closeAt, gap)
			}
			if l, ok := p.LegalFor(k, j); ok {
				if closeAt < time.Duration(l.MinLead) || open > time.Duration(l.MaxLead) {
					t.Fatalf("%s: window [%v, %v] outside legal [%v, %v]", where, closeAt, open, l.MinLead, l.MaxLead)
				}
			}
		}
		for _, k := range p.Notices {
			if err := notice.ValidateKind(k.Kind); err != nil {
				t.Fatalf("kind %q: %v", k.Kind, err)
			}
			check(k.Kind, k, "", k.Default())
			for j := range p.Legal {
				check(k.Kind+" in "+j, k, j, k.WindowFor(j))
			}
			for j := range k.Legal {
				check(k.Kind+" in "+j, k, j, k.WindowFor(j))
			}
			for _, j := range k.Overrides() {
				check(k.Kind+" in "+j, k, j, k.ByJurisdiction[j])
			}
		}
		bucket := func(where string, b pace.Bucket) {
			if !(b.PerSecond > 0) || math.IsInf(b.PerSecond, 0) || b.Burst < 1 {
				t.Fatalf("%s: bucket %+v", where, b)
			}
		}
		bucket("default", p.Rate.Default)
		bucket("global", p.Rate.Global)
		for d, b := range p.Rate.Domains {
			bucket(d, b)
			if a, err := address.Parse("x@" + d); err != nil || a.Domain != d {
				t.Fatalf("rate domain %q is not in lower-case ASCII form (%v)", d, err)
			}
		}
		if p.Concurrency < 1 || p.Concurrency > 1024 {
			t.Fatalf("concurrency %d", p.Concurrency)
		}
		if p.UnknownJurisdiction != policy.UnknownDefault && p.UnknownJurisdiction != policy.UnknownInvalid {
			t.Fatalf("unknown_jurisdiction %q", p.UnknownJurisdiction)
		}
	})
}
