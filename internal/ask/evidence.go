package ask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// decode reads payloads shaped as the provider's webhooks post them
// (format is one of reconcile.Formats) through reconcile.ReadFormat, so
// that what an API answers is judged by the same rules as a webhook: it
// returns their settlements, and an error for a payload reconcile cannot
// read (the API answered something else than its reference documents).
func decode(format string, payloads ...any) ([]ledger.Settlement, error) {
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
	st, err := reconcile.ReadFormat(&buf, format, func(s ledger.Settlement) error {
		out = append(out, s)
		return nil
	})
	if err == nil && st.Malformed+st.Oversized > 0 {
		err = fmt.Errorf("%s API: %d events reconcile cannot read", format, st.Malformed+st.Oversized)
	}
	return out, err
}

// covers reports whether ss hold an event of c's attempt: one that names
// it, or one that names no attempt and is dated no earlier than the claim
// (less ledger.ClockSkew), as ledger.Settle matches them.
func covers(c Claim, ss []ledger.Settlement) bool {
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

func lower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
