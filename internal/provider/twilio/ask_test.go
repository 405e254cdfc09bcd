package twilio_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"scan/internal/ask"
	"scan/internal/ledger"
	"scan/internal/provider/twilio"
	"scan/internal/provider/twilio/twiliotest"
)

var _ ask.Provider = (*twilio.Asker)(nil)

func TestAskAbout(t *testing.T) {
	t.Parallel()
	tw := twiliotest.New(t)
	tw.PageSize = 1 // every lookup by body pages
	c := client(t, tw, func(c *twilio.Config) { c.Timeout = 300 * time.Millisecond })
	ctx := context.Background()
	rec, err := c.Send(ctx, msg("+14155550100"))
	if err != nil {
		t.Fatal(err)
	}
	lost := msg(twiliotest.NeverAnswered)
	lost.Text = "another body"
	if _, err := c.Send(ctx, lost); err == nil {
		t.Fatal("the lost answer answered")
	}
	if _, err := c.Send(ctx, msg("+14155550101")); err != nil {
		t.Fatal(err)
	}
	a := twilio.NewAsker(c)
	claimed := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	now := claimed.Add(time.Hour)

	ans, err := a.About(ctx, ask.Claim{Key: key, ProviderID: rec.ProviderID, Attempt: 2, ClaimedAt: claimed}, now)
	if err != nil || len(ans.Settlements) != 1 || ans.Settlements[0].Kind != ledger.KindAccepted || ans.Settlements[0].Attempt != 2 {
		t.Fatalf("by sid: %+v, %v", ans, err)
	}
	tw.SetStatus(rec.ProviderID, "undelivered", "30005")
	ans, _ = a.About(ctx, ask.Claim{Key: key, ProviderID: rec.ProviderID, Attempt: 2, ClaimedAt: claimed}, now)
	if s := ans.Settlements[0]; s.Kind != ledger.KindBounceHard || s.To != ledger.Failed {
		t.Fatalf("undelivered 30005: %+v", s)
	}
	sum := sha256.Sum256([]byte("another body"))
	ans, err = a.About(ctx, ask.Claim{Key: key, Digest: sum[:], Attempt: 1, ClaimedAt: claimed}, now)
	if err != nil || len(ans.Settlements) != 1 || ans.Settlements[0].Kind != ledger.KindDelivered || ans.Settlements[0].ProviderID == "" {
		t.Fatalf("by body digest: %+v, %v", ans, err)
	}
	none := sha256.Sum256([]byte("never sent"))
	ans, err = a.About(ctx, ask.Claim{Key: key, Digest: none[:], Attempt: 1, ClaimedAt: claimed}, now)
	// A body no listed Message has is no evidence that it was never sent
	// (Twilio may change a body): the claim stays in quarantine.
	if err != nil || len(ans.Settlements) != 0 || ans.Unknown == "" {
		t.Fatalf("not listed: %+v, %v", ans, err)
	}
	// A sid Twilio does not know, past the index delay, was never created.
	ans, err = a.About(ctx, ask.Claim{Key: key, ProviderID: "SM00000000000000000000000000000000", Attempt: 1, ClaimedAt: claimed}, now)
	if err != nil || len(ans.Settlements) != 1 || ans.Settlements[0].To != ledger.Retry || ans.Settlements[0].Kind != ledger.KindNotSent {
		t.Fatalf("unknown sid: %+v, %v", ans, err)
	}
	ans, err = a.About(ctx, ask.Claim{Key: key, Digest: none[:], Attempt: 1, ClaimedAt: claimed}, claimed.Add(time.Minute))
	if err != nil || !ans.Pending {
		t.Fatalf("not yet listed: %+v, %v", ans, err)
	}
	if ans, err := a.About(ctx, ask.Claim{Key: key, ClaimedAt: claimed}, now); err != nil || ans.Unknown == "" || len(ans.Settlements) != 0 {
		t.Fatalf("a claim with neither sid nor digest: %+v, %v; want unknown, nothing settled", ans, err)
	}
	if err := a.Since(ctx, claimed, nil); !errors.Is(err, ask.ErrUnsupported) {
		t.Fatalf("Since: %v", err)
	}
}
