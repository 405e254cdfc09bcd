// Package pace models a domain's pace, once: a token Bucket and the
// Limits that give each recipient domain, the provider account and the sms
// channel their buckets. The policy file decodes into these types
// (internal/policy), the pass divides them among its shards (Limits.Share)
// and sizes its claims by them (Limits.Pace), and internal/send's
// Dispatcher paces its sends with their token buckets. It imports nothing
// of the project, so whoever reads a pace does not import the senders.
//
// Bucket and Limits are values: safe for concurrent use as long as no one
// writes Limits.Domains while another reads it.
package pace

import (
	"time"

	"fmt"
	"math"
	"strings"
)

// Bucket is a token bucket: PerSecond tokens a second, up to Burst at once.
// Its fields carry the policy file's keys.
//
// The zero Bucket is valid and does not limit: a PerSecond of 0 means no
// limit (rate.Inf), whatever Burst says. This is the opposite of
// golang.org/x/time/rate's Limit, whose zero allows no events: a Bucket
// that sends nothing cannot be written. A Burst below 1 is taken as 1. A
// policy file cannot state an unlimited bucket: policy.Validate asks
// Check for one that limits.
type Bucket struct {
	PerSecond float64 `yaml:"per_second"`
	Burst     int     `yaml:"burst"`
}

// BucketError is a Bucket field out of range, as Check reports it.
type BucketError struct {
	Field string // the field's key in the policy file: "per_second" or "burst"
	Msg   string
}

func (e *BucketError) Error() string { return e.Field + " " + e.Msg }

// Check returns a *BucketError for the first field of b out of range, or
// nil. Every Bucket needs a finite PerSecond and no negative field; with
// mustLimit (every bucket a policy file states) zero is refused too: it
// needs PerSecond above 0 and Burst at least 1.
func (b Bucket) Check(mustLimit bool) error {
	finite := !math.IsNaN(b.PerSecond) && !math.IsInf(b.PerSecond, 0)
	switch {
	case mustLimit && !(finite && b.PerSecond > 0):
		return &BucketError{"per_second", fmt.Sprintf("must be a number greater than 0, got %v", b.PerSecond)}
	case mustLimit && b.Burst < 1:
		return &BucketError{"burst", fmt.Sprintf("must be at least 1, got %d", b.Burst)}
	case !(finite && b.PerSecond >= 0):
		return &BucketError{"per_second", fmt.Sprintf("must be a finite number, 0 (no limit) or more, got %v", b.PerSecond)}
	case b.Burst < 0:
		return &BucketError{"burst", fmt.Sprintf("must be at least 0, got %d", b.Burst)}
	}
	return nil
}

// Limits are the token buckets that pace sends. Each distinct recipient
// domain gets its own bucket, configured by Domains[domain] when present
// (keys are matched case-insensitively) or else by Default; every send
// also takes a token from Global, the provider account's ceiling. A zero
// Limits means no limit at all, as a zero Bucket does. Its fields carry
// the policy file's keys (the policy's rate section).
type Limits struct {
	Default Bucket            `yaml:"default"`
	Domains map[string]Bucket `yaml:"domains"`
	Global  Bucket            `yaml:"global"`
	// SMS is the sms channel's own bucket (issue 30), apart from every
	// email domain's and from Global: Twilio paces a long code at about
	// one message a second. The policy's default is 1/s, burst 1.
	SMS Bucket `yaml:"sms"`
}

// Limited reports whether l paces email at all: a global, default or
// domain bucket with a rate (SMS, the sms channel's, aside).
func (l Limits) Limited() bool {
	if l.Global.PerSecond != 0 || l.Default.PerSecond != 0 {
		return true
	}
	for _, b := range l.Domains {
		if b.PerSecond > 0 {
			return true
		}
	}
	return false
}

// For returns the bucket of a recipient domain: Domains[domain] when
// present (domain lower-cased; Domains' keys are expected lower-case, as
// the policy stores them), else Default.
func (l Limits) For(domain string) Bucket {
	if b, ok := l.Domains[strings.ToLower(domain)]; ok {
		return b
	}
	return l.Default
}

// Pace returns the most notices a second that can go to domain: the lower
// of its bucket's rate and the global rate. Zero means no limit.
func (l Limits) Pace(domain string) float64 {
	p, g := l.For(domain).PerSecond, l.Global.PerSecond
	switch {
	case p == 0:
		return g
	case g == 0:
		return p
	}
	return min(p, g)
}

// Share returns one of shards passes' share of l, for passes that run at
// once and share the limits: each bucket's rate and burst divided by
// shards (a burst never below 1), so that the fleet as a whole keeps l.
// Domains are keyed in lower case, as recipients' domains are. An
// unlimited bucket stays unlimited; shards is at least 1.
func (l Limits) Share(shards int) Limits {
	n := float64(shards)
	div := func(b Bucket) Bucket {
		return Bucket{PerSecond: b.PerSecond / n, Burst: max(1, int(float64(b.Burst)/n))}
	}
	s := Limits{Default: div(l.Default), Global: div(l.Global), SMS: div(l.SMS), Domains: make(map[string]Bucket, len(l.Domains))}
	for d, b := range l.Domains {
		s.Domains[strings.ToLower(d)] = div(b)
	}
	return s
}

// Rate measures events a second over a sliding Window: it reports the
// higher of the last full window and the current one, so that a speed-up
// is followed at once and a slow-down within a window. The zero value with
// a Window set is ready to use; Window 0 means DefaultRateWindow. A Rate
// is not safe for concurrent use.
type Rate struct {
	Window time.Duration
	t0     time.Time
	n0     int
	last   float64
}

// DefaultRateWindow is a Rate's window when its Window is 0.
const DefaultRateWindow = 500 * time.Millisecond

// At returns the rate at now, given the running count of events n.
func (r *Rate) At(now time.Time, n int) float64 {
	w := r.Window
	if w <= 0 {
		w = DefaultRateWindow
	}
	if r.t0.IsZero() {
		r.t0, r.n0 = now, n
		return 0
	}
	el := now.Sub(r.t0)
	cur := 0.0
	if el >= w/10 {
		cur = float64(n-r.n0) / el.Seconds()
	}
	if el >= w {
		r.last, r.t0, r.n0 = cur, now, n
	}
	return max(r.last, cur)
}
