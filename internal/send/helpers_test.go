package send_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"scan/internal/message"
	"scan/internal/send"
)

var (
	claimedAt = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	renewsAt  = time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)
)

// key returns a 64-hex-character notice key for s.
func key(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// notice returns a valid notice number i to someone at domain.
func notice(i int, domain string) send.Notice {
	n := send.Notice{
		Key:         key(fmt.Sprintf("%s/%d", domain, i)),
		RenewsAt:    renewsAt,
		To:          fmt.Sprintf("user%d@%s", i, domain),
		Domain:      domain,
		Name:        "Ada Lovelace",
		Plan:        "Pro",
		CancelToken: fmt.Sprintf("tok-%d", i),
		ClaimedAt:   claimedAt,
	}
	// The tuple's fields (send.Notice embeds notice.Tuple), set by name:
	// this file's notice helper hides the package.
	n.SubscriptionID, n.Kind, n.PeriodStart = fmt.Sprintf("sub_%d", i), "renewal_notice_t72", time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	return n
}

func newRenderer(t testing.TB) *message.Renderer {
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

func render(t testing.TB, r *message.Renderer, n send.Notice) *send.Message {
	t.Helper()
	m, err := r.Render(n)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
