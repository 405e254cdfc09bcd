package ask

import (
	"bytes"
	"encoding/json"
	"fmt"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// Decode reads payloads shaped as provider name's webhooks post them
// through its event mapping dec (reconcile.ReadWith), so that what an API
// answers is judged by the same rules as a webhook: it returns their
// settlements, and an error for a payload dec cannot read (the API
// answered something else than its reference documents).
func Decode(name string, dec reconcile.Decoder, payloads ...any) ([]ledger.Settlement, error) {
	var buf bytes.Buffer
	for _, p := range payloads {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	var out []ledger.Settlement
	st, err := reconcile.ReadWith(&buf, dec, func(s ledger.Settlement) error {
		out = append(out, s)
		return nil
	})
	if err == nil && st.Malformed+st.Oversized > 0 {
		err = fmt.Errorf("%s API: %d events reconcile cannot read", name, st.Malformed+st.Oversized)
	}
	return out, err
}

// Covers reports whether ss hold an event of c's attempt: one that names
// it, or one that names no attempt and is dated no earlier than the claim
// (less ledger.ClockSkew), as ledger.Settle matches them.
func Covers(c Claim, ss []ledger.Settlement) bool {
	for _, s := range ss {
		switch {
		case s.Attempt == c.Attempt:
			return true
		case s.Attempt == 0 && !s.At.IsZero() && !s.At.Before(c.ClaimedAt.Add(-ledger.ClockSkew)):
			return true
		case s.Attempt == 0 && c.Attempt <= 1:
			return true
		}
	}
	return false
}
