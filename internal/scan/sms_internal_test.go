package scan

import (
	"testing"

	"scan/internal/ledger"
)

// A row read with no address whose email notice this pass did not record
// failed (the email stage claimed it first: the row gained an address
// since) is not texted, nor recorded unreached by sms; the others are.
func TestSMSWaitsForItsEmailRecord(t *testing.T) {
	bt := sweepBatch{
		after:   map[string]string{"e1": "s1", "e2": "s2", "e3": "s3"},
		claims:  []ledger.Claim{{Key: "s1"}, {Key: "s2"}, {Key: "s4"}},
		noPhone: []ledger.Claim{{Key: "s3"}},
	}
	bt.dropUnrecorded([]string{"e1"})
	if len(bt.claims) != 2 || bt.claims[0].Key != "s1" || bt.claims[1].Key != "s4" || len(bt.noPhone) != 0 {
		t.Fatalf("claims %+v, no phone %+v", bt.claims, bt.noPhone)
	}
}
