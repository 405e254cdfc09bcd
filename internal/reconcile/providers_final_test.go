package reconcile_test

import (
	"bytes"
	"os"
	"testing"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// Each email provider's final.txt (issue 36) holds, from its documented
// examples, the failure it reports as final after its own retries (or a
// block) and a delivery: the first is undeliverable, the second
// delivered, whatever the provider's words.
func TestFinalFixtures(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"ses", "sendgrid", "mailgun", "postmark"} {
		b, err := os.ReadFile(fixturePath(p + "-final"))
		if err != nil {
			t.Fatal(err)
		}
		dec := reconcile.DecoderOf(p)
		var got []ledger.Delivery
		if _, err := reconcile.Split(bytes.NewReader(b), func(line int, payload []byte, problem string, oversized bool) error {
			ev, err := dec(payload)
			if err != nil || problem != "" {
				t.Errorf("%s:%d: %v %s", p, line, err, problem)
				return nil
			}
			got = append(got, ev.Kind.Delivery())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != ledger.DeliveryUndeliverable || got[1] != ledger.DeliveryDelivered {
			t.Errorf("%s: %v, want [undeliverable delivered]", p, got)
		}
	}
}
