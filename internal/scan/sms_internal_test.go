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
		cands:   []candidate{{due: due{claim: ledger.Claim{Key: "s1"}}}, {due: due{claim: ledger.Claim{Key: "s2"}}}, {due: due{claim: ledger.Claim{Key: "s4"}}, reclaim: true}},
		noPhone: []ledger.Claim{{Key: "s3"}},
	}
	bt.dropUnrecorded([]string{"e1"})
	if len(bt.cands) != 2 || bt.cands[0].claim.Key != "s1" || bt.cands[1].claim.Key != "s4" || len(bt.noPhone) != 0 {
		t.Fatalf("claims %+v, no phone %+v", bt.cands, bt.noPhone)
	}
}
