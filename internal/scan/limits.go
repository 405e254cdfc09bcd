package scan

import (
	"strings"

	"scan/internal/policy"
	"scan/internal/send"
)

// shardLimits turns the policy's rates into the dispatcher's buckets for
// one of shards passes that share them: each bucket's rate and burst are
// divided by shards (a burst never below 1), so the fleet as a whole keeps
// the policy. Domains are keyed in lower case, as recipients' domains are.
func shardLimits(r policy.Rate, shards int) send.Limits {
	n := float64(shards)
	div := func(b policy.Bucket) send.Bucket {
		return send.Bucket{PerSecond: b.PerSecond / n, Burst: max(1, int(float64(b.Burst)/n))}
	}
	limits := send.Limits{Default: div(r.Default), Global: div(r.Global), Domains: map[string]send.Bucket{}}
	for d, b := range r.Domains {
		limits.Domains[strings.ToLower(d)] = div(b)
	}
	return limits
}
