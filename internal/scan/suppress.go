package scan

import (
	"scan/internal/ledger"
)

// The email suppression list is checked in the claim statements
// themselves (ledger.ClaimOptions.Suppression): one probe of the list's
// hash index per notice inside the batch's INSERT ... SELECT, and inside
// the retry rows' re-claim, never a query per notice nor a statement of
// its own. A new notice whose recipient is listed is inserted failed with
// reason suppressed_address, a retry row is failed the same way instead
// of re-claimed; both come back marked (ledger.Won.Suppressed), are
// counted in Summary.SuppressedAddress and not sent, and a kind's next
// channel takes them. With an empty list at the start of the pass
// (suppressionEmail false) nothing is probed: an address listed during
// the pass counts from the next one.

// retryDigests returns the recipients' digests of the retry rows keys,
// from the rows the pass read (the address it would send to now, which
// the probe checks), in the order of keys; nil when nothing is probed.
func (p *Pass) retryDigests(byKey map[string]candidate, keys []string) [][]byte {
	if !p.suppressionEmail {
		return nil
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = byKey[k].claim.AddressHMAC
	}
	return out
}

// takeSuppressed takes out of won the notices a claim statement recorded
// failed because their recipient is on the email suppression list, counts
// them, hands them to the sms stage (byKey: the candidates claimed), and
// returns the rest (to send) and how many it took.
func (p *Pass) takeSuppressed(c *counters, won []ledger.Won, byKey map[string]candidate) ([]ledger.Won, int) {
	out := won[:0:0]
	var ids []string
	for _, w := range won {
		if !w.Suppressed {
			out = append(out, w)
		} else {
			ids = append(ids, byKey[w.Key].claim.SubscriptionID)
		}
	}
	n := len(won) - len(out)
	if n == 0 {
		return won, 0
	}
	c.add(func(x *Summary) { x.SuppressedAddress += n })
	if handsOver(ledger.Failed) { // recorded failed (suppressed_address) by the claim
		p.nextQ.push(ids...) // the kind's next channel, in this pass
	}
	p.log.Info().Int("suppressed_address", n).Msg("recipients on the suppression list: not sent by email")
	return out, n
}
