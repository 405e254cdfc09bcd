// Package messagetest holds what the tests of package message (what a
// notice says) and package send (how it leaves) both need: a valid notice,
// a renderer with the reference configuration, a rendered message, and the
// CPU time a benchmark spent. Each package's helpers_test.go calls these
// under its own short names.
package messagetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"syscall"
	"testing"
	"time"

	"scan/internal/message"
	"scan/internal/notice"
)

// ClaimedAt and RenewsAt are the instants every test notice carries.
var (
	ClaimedAt = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	RenewsAt  = time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)
)

// Key returns a 64-hex-character notice key for s.
func Key(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Notice returns a valid notice number i to someone at domain.
func Notice(i int, domain string) notice.Notice {
	return notice.Notice{
		Tuple: notice.Tuple{
			SubscriptionID: fmt.Sprintf("sub_%d", i), Kind: "renewal_notice_t72",
			PeriodStart: time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC),
		},
		Key:         Key(fmt.Sprintf("%s/%d", domain, i)),
		RenewsAt:    RenewsAt,
		To:          fmt.Sprintf("user%d@%s", i, domain),
		Domain:      domain,
		Name:        "Ada Lovelace",
		Plan:        "Pro",
		CancelToken: fmt.Sprintf("tok-%d", i),
		ClaimedAt:   ClaimedAt,
	}
}

// NewRenderer returns a renderer with the reference configuration.
func NewRenderer(t testing.TB) *message.Renderer {
	t.Helper()
	r, err := message.NewRenderer(message.RenderConfig{
		From:            "Example Box <notices@example.com>",
		MessageIDDomain: "notices.example.com",
		CancelURL:       "https://example.com/cancel?token={token}",
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Render renders n with r, failing t on an error.
func Render(t testing.TB, r *message.Renderer, n notice.Notice) *notice.Message {
	t.Helper()
	m, err := r.Render(n)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ReportCPU adds the process's CPU time (user + system, every thread: the
// garbage collector's and the kernel's work included) per op to b's
// results as cpu-ns/op, from the call to the deferred return. Wall time
// (ns/op) counts the time another process takes the CPU; this does not.
//
//	defer messagetest.ReportCPU(b)()
//	for b.Loop() { ... }
func ReportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
