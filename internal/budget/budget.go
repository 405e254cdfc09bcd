// Package budget keeps the policy's rates for the whole fleet (issue 38):
// every pass on one ledger (shards, concurrent runs, manual catch-ups,
// `scan schedule`) leases its send slots from the same token buckets, rows
// of notice_rate in the ledger (sql/0028, ledger.RateTake), so that the
// sum of their sends keeps each domain's rate, the global rate and the
// sms rate. A Budget is the send.Budget a pass's Dispatcher paces by.
//
// A lease is one statement for all the domains a dispatcher lacks slots
// for, with the global bucket beside them: never a statement per notice.
// It grants slots no further ahead than Ahead, so a pass that cannot get
// any waits (its other domains go on), and a crashed pass's slots pass by
// within Ahead. A Budget is safe for concurrent use.
package budget

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/pace"
	"scan/internal/send"
)

// DefaultAhead is how far ahead of now a lease reaches by default: the
// pass's claim horizon, so that what a pass claims it can have slots for.
const DefaultAhead = time.Second

// The bucket names in notice_rate.
const (
	BucketGlobal = "global"
	BucketSMS    = "sms"
	bucketDomain = "domain:" // + the recipient domain, lower case
)

// SMSDomain is the dispatcher queue key of the sms channel: a Budget
// paces it by the policy's rate.sms (bucket BucketSMS), apart from every
// email domain and from the global bucket. No email domain can be named
// so (it is not a host name).
const SMSDomain = "sms:"

// bucket returns the notice_rate bucket and the policy bucket of a
// dispatcher queue key, and whether its sends take global slots too.
func (b *Budget) bucket(domain string) (name string, bk pace.Bucket, global bool) {
	if domain == SMSDomain {
		return BucketSMS, b.limits.SMS, false
	}
	return bucketDomain + domain, b.limits.For(domain), true
}

// Budget leases send slots of the policy's buckets from the ledger.
type Budget struct {
	db     *sqlx.DB
	limits pace.Limits
	ahead  time.Duration
}

// New returns the Budget of limits (the policy's whole rate section, not
// a shard's share: the ledger shares it) on db, leasing Ahead ahead
// (DefaultAhead when 0).
func New(db *sqlx.DB, limits pace.Limits, ahead time.Duration) *Budget {
	if ahead <= 0 {
		ahead = DefaultAhead
	}
	domains := make(map[string]pace.Bucket, len(limits.Domains))
	for d, b := range limits.Domains {
		domains[strings.ToLower(d)] = b
	}
	limits.Domains = domains
	return &Budget{db: db, limits: limits, ahead: ahead}
}

// Paced reports whether sends to domain are limited at all: by the
// domain's bucket or by the global one.
func (b *Budget) Paced(domain string) bool {
	_, bk, global := b.bucket(domain)
	return bk.PerSecond > 0 || (global && b.limits.Global.PerSecond > 0)
}

// stamp is one domain slot on its way to a global one.
type stamp struct {
	domain string
	at     time.Time
}

// Lease leases slots for asks (send.Budget): each domain's from its
// bucket, and every slot also from the global bucket, in one statement.
// A domain slot is paired with the earliest global slot left, and sent at
// the later of the two; domain slots beyond the global grant are dropped
// (unused, they pass by).
func (b *Budget) Lease(ctx context.Context, now time.Time, asks []send.SlotAsk) ([]send.SlotGrant, error) {
	var rasks []ledger.RateAsk
	total := 0
	for _, a := range asks {
		name, bk, global := b.bucket(a.Domain)
		if global {
			total += a.N
		}
		if bk.PerSecond > 0 {
			rasks = append(rasks, ledger.RateAsk{Bucket: name, Want: a.N, PerSecond: bk.PerSecond, Burst: max(bk.Burst, 1)})
		}
	}
	g := b.limits.Global
	if g.PerSecond > 0 && total > 0 {
		rasks = append(rasks, ledger.RateAsk{Bucket: BucketGlobal, Want: total, PerSecond: g.PerSecond, Burst: max(g.Burst, 1)})
	}
	grants, err := b.take(ctx, now, rasks)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*send.SlotGrant, len(asks))
	var stamps, own []stamp // own: slots that take no global slot (sms)
	for _, a := range asks {
		sg := &send.SlotGrant{Domain: a.Domain}
		out[a.Domain] = sg
		name, bk, global := b.bucket(a.Domain)
		to := &stamps
		if !global {
			to = &own
		}
		if bk.PerSecond == 0 {
			*to = appendSlots(*to, a.Domain, now, 0, a.N)
			continue
		}
		rg := grants[name]
		*to = appendSlots(*to, a.Domain, rg.Start, 1/bk.PerSecond, rg.Granted)
		if rg.Granted < a.N {
			sg.Retry = b.retry(rg.Next)
		}
	}
	if g.PerSecond > 0 && total > 0 {
		stamps = b.pairGlobal(stamps, grants[BucketGlobal], 1/g.PerSecond, out)
	}
	for _, s := range append(stamps, own...) {
		out[s.domain].Slots = append(out[s.domain].Slots, s.at)
	}
	res := make([]send.SlotGrant, 0, len(out))
	for _, sg := range out {
		res = append(res, *sg)
	}
	return res, nil
}

// take runs one lease (one statement) and returns its grants by bucket.
func (b *Budget) take(ctx context.Context, now time.Time, asks []ledger.RateAsk) (map[string]ledger.RateGrant, error) {
	byBucket := make(map[string]ledger.RateGrant, len(asks))
	if len(asks) == 0 {
		return byBucket, nil
	}
	gs, err := ledger.RateTake(ctx, b.db, now, b.ahead, asks)
	for _, g := range gs {
		byBucket[g.Bucket] = g
	}
	return byBucket, err
}

// pairGlobal gives each domain slot, earliest first, the next global slot
// of gr, and returns the slots that got one, each at the later of its two
// times. Domains left without a slot they asked for retry when the global
// bucket has room.
func (b *Budget) pairGlobal(stamps []stamp, gr ledger.RateGrant, iv float64, out map[string]*send.SlotGrant) []stamp {
	slices.SortStableFunc(stamps, func(x, y stamp) int { return x.at.Compare(y.at) })
	n := min(len(stamps), gr.Granted)
	for i := range n {
		if t := offset(gr.Start, iv, i); t.After(stamps[i].at) {
			stamps[i].at = t
		}
	}
	for _, s := range stamps[n:] {
		out[s.domain].Retry = later(out[s.domain].Retry, b.retry(gr.Next))
	}
	kept := stamps[:n]
	slices.SortStableFunc(kept, func(x, y stamp) int {
		return cmp.Or(strings.Compare(x.domain, y.domain), x.at.Compare(y.at))
	})
	return kept
}

// retry is when a bucket whose next free slot is next has room for a
// quarter of a lease: asking earlier would win a slot or two a statement.
func (b *Budget) retry(next time.Time) time.Time {
	return next.Add(-b.ahead + b.ahead/4)
}

// appendSlots appends n slots of domain, iv seconds apart from start.
func appendSlots(stamps []stamp, domain string, start time.Time, iv float64, n int) []stamp {
	for i := range n {
		stamps = append(stamps, stamp{domain: domain, at: offset(start, iv, i)})
	}
	return stamps
}

func offset(start time.Time, iv float64, i int) time.Time {
	return start.Add(time.Duration(float64(i) * iv * float64(time.Second)))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
