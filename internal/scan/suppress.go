package scan

import (
	"context"
	"errors"

	"scan/internal/ledger"
	"scan/internal/notice"
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

// Fewer probes (issue 39): the pass reads the list's summary at its start
// (loadSummary: a bit set over every channel's digests, kept by the
// database, sql/0042), and each claim batch refreshes it in its own
// transaction (the chunks written since) and probes only the notices
// whose digest, or a previous digest, hits a set bit: with 1M entries
// about 6% of them. An entry committed before a batch's transaction is
// honoured by that batch.

// Across a secret rotation (issue 38), each probe also looks the address
// up under every previous secret (Config.PreviousSecrets): one more probe
// of the hash index per notice and previous secret, in the same
// statement, and only while the list has entries. An entry found that way
// is re-recorded under the current secret by that statement, so the list
// turns over to the current secret as the pass meets its addresses, and a
// previous secret can be dropped once `scan suppress list --previous`
// shows none (docs/fleet.md).

// checkPreviousKeys decides, once a pass, whether the email probe looks
// addresses up under the previous secrets too: only while some entry of
// the list is not keyed under the current secret (ledger.SuppressionAnyNotUnder).
// Once the list has turned over, NOTICE_KEY_SECRET_PREVIOUS costs the
// pass nothing more than that one question.
func (p *Pass) checkPreviousKeys(ctx context.Context) error {
	p.probePrevious = false
	if len(p.keys.Previous) == 0 || !p.suppressionEmail {
		return nil
	}
	stale, err := ledger.SuppressionAnyNotUnder(ctx, p.db, notice.ChannelEmail, p.keys.Current.KeyID())
	if err != nil {
		return err
	}
	p.probePrevious = stale
	if !stale {
		p.log.Info().Msg("every email suppression entry is keyed under NOTICE_KEY_SECRET: the previous secrets are not probed")
	}
	return nil
}

// loadSummary reads the suppression list's summary once a pass, for the
// claim statements to probe only the notices it may list
// (ledger.ClaimOptions.Summary), and logs its cost. A role that may not
// read it probes every notice, as a pass did before the summary.
func (p *Pass) loadSummary(ctx context.Context) error {
	start := p.cfg.Clock.Now()
	s, err := ledger.LoadSuppressionSummary(ctx, p.db)
	if errors.Is(err, ledger.ErrSummaryDenied) {
		p.summary = nil
		p.log.Warn().Err(err).Msg("the suppression summary is not readable by this role: every notice is probed (GRANT SELECT ON notice_suppression_summary)")
		return nil
	}
	if err != nil {
		return err
	}
	p.summary = s
	p.log.Debug().Int("chunks", s.Chunks()).Dur("took", p.cfg.Clock.Now().Sub(start)).Msg("suppression summary read")
	return nil
}

// retryDigests returns the recipients' digests of the retry rows keys,
// and their digests under the previous secrets (where derived), from the
// rows the pass read (the address it would send to now, which the probe
// checks), in the order of keys; nil when opt probes nothing.
func retryDigests(opt ledger.ClaimOptions, byKey map[string]candidate, keys []string) ([][]byte, [][][]byte) {
	if !opt.Suppression {
		return nil, nil
	}
	out, prev := make([][]byte, len(keys)), make([][][]byte, len(keys))
	for i, k := range keys {
		out[i], prev[i] = byKey[k].claim.AddressHMAC, byKey[k].claim.PreviousHMACs
	}
	return out, prev
}

// takeSuppressed takes out of won the notices a claim statement recorded
// failed because their recipient is on channel's suppression list, counts
// them, hands them to next, the next channel's stage (byKey: the
// candidates claimed), and returns the rest (to send) and how many it
// took.
func (p *Pass) takeSuppressed(c *counters, channel string, won []ledger.Won, byKey map[string]candidate, next *handoff) ([]ledger.Won, int) {
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
		next.Push(ids...) // the kind's next channel, in this pass
	}
	p.log.Info().Int("suppressed_address", n).Str("channel", channel).Msg("recipients on the suppression list: not sent by this channel")
	return out, n
}
