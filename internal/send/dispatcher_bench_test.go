package send_test

import (
	"fmt"
	"testing"

	"scan/internal/pace"
	"scan/internal/send"
)

// BenchmarkDispatcherLimited is the limiter scheduler's own cost: notices
// spread over 100 domains, each with its own bucket (rates far above what
// the loop reaches, so nothing waits), plus the global bucket. Compare
// with BenchmarkDispatcher, which has no buckets at all.
func BenchmarkDispatcherLimited(b *testing.B) {
	domains := map[string]pace.Bucket{}
	for i := range 100 {
		domains[fmt.Sprintf("d%d.example", i)] = pace.Bucket{PerSecond: 1e9, Burst: 1000}
	}
	benchDispatcher(b, send.DispatcherConfig{
		Sender: fakeSender{fn: accept},
		Limits: pace.Limits{Default: pace.Bucket{PerSecond: 1e9, Burst: 1000}, Domains: domains, Global: pace.Bucket{PerSecond: 1e9, Burst: 1000}},
	})
}
