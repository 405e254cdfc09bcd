package scan

import (
	"context"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// dropSuppressed takes out of a batch about to be claimed the notices whose
// recipient is on the email suppression list, checked for the whole batch
// in one statement (ledger.SuppressionMatch, one probe of the list's
// primary key per notice, no query per notice). New notices are recorded
// failed with reason suppressed_address (ledger.RecordUnreached), retry
// rows are failed the same way instead of re-claimed; both are counted in
// Summary.SuppressedAddress. A kind's next channel takes them. With an
// empty list at the start of the pass (suppressionEmail false) nothing is
// probed: an address listed during the pass counts from the next one.
func (s *Pass) dropSuppressed(ctx context.Context, c *counters, byKey map[string]candidate, claims []ledger.Claim, retryKeys []string) ([]ledger.Claim, []string, error) {
	if !s.suppressionEmail {
		return claims, retryKeys, nil
	}
	digests := make([][]byte, 0, len(claims)+len(retryKeys))
	for _, cl := range claims {
		digests = append(digests, cl.AddressHMAC)
	}
	for _, k := range retryKeys {
		digests = append(digests, byKey[k].claim.AddressHMAC)
	}
	var hit []bool
	_, err := s.claim(ctx, func(ctx context.Context) ([]ledger.Won, error) {
		var err error
		hit, err = ledger.SuppressionMatch(ctx, s.db, notice.ChannelEmail, digests)
		return nil, err
	})
	if err != nil {
		return nil, nil, err
	}
	var keepC, dropC []ledger.Claim
	for i, cl := range claims {
		if hit[i] {
			dropC = append(dropC, cl)
		} else {
			keepC = append(keepC, cl)
		}
	}
	var keepR, dropR []string
	for i, k := range retryKeys {
		if hit[len(claims)+i] {
			dropR = append(dropR, k)
		} else {
			keepR = append(keepR, k)
		}
	}
	if len(dropC)+len(dropR) == 0 {
		return claims, retryKeys, nil
	}
	opt := ledger.ClaimOptions{State: ledger.Failed, Now: s.cfg.Now, RunID: s.cfg.RunID, Channel: notice.ChannelEmail}
	var recorded, marked []string
	_, err = s.claim(ctx, func(ctx context.Context) ([]ledger.Won, error) {
		var err error
		if recorded, err = ledger.RecordUnreached(ctx, s.db, opt, ledger.ReasonSuppressed, dropC); err != nil {
			return nil, err
		}
		marked, err = ledger.MarkUnreached(ctx, s.db, s.cfg.Now, ledger.ReasonSuppressed, dropR)
		return nil, err
	})
	if err != nil {
		return nil, nil, err
	}
	n := len(recorded) + len(marked)
	c.add(func(x *Summary) { x.SuppressedAddress += n })
	s.smsQ.push(suppressedIDs(dropC, dropR, byKey)...) // the kind's next channel, in this pass
	s.log.Info().Int("suppressed_address", n).Msg("recipients on the suppression list: not sent by email")
	return keepC, keepR, nil
}

// suppressedIDs are the subscription ids of the claims and retry rows
// dropSuppressed failed, for the sms stage.
func suppressedIDs(claims []ledger.Claim, retryKeys []string, byKey map[string]candidate) []string {
	ids := make([]string, 0, len(claims)+len(retryKeys))
	for _, cl := range claims {
		ids = append(ids, cl.SubscriptionID)
	}
	for _, k := range retryKeys {
		ids = append(ids, byKey[k].claim.SubscriptionID)
	}
	return ids
}
