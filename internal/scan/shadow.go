package scan

import (
	"context"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/subscription"
)

// ShadowSummary is what `scan run --shadow` prints: what the pass would
// have claimed, and how many of those it recorded for the first time.
type ShadowSummary struct {
	RunID  string `json:"run_id"`
	Shadow bool   `json:"shadow"`
	// Eligible counts the due notices with valid rows the pass read,
	// WouldClaim those it would have claimed now (not held by the quiet
	// hours), Recorded those of them no earlier shadow pass had recorded.
	Eligible   int   `json:"eligible"`
	Invalid    int   `json:"invalid"`
	WouldClaim int   `json:"would_claim"`
	WouldDefer int   `json:"would_defer"`
	Recorded   int   `json:"recorded"`
	DurationMS int64 `json:"duration_ms"`
}

// Shadow runs a pass that enforces nothing (issue 27): it claims nothing
// in the ledger and sends nothing, and records in notice_shadow each
// notice it would have claimed now, with its window, once however many
// shadow passes see it (ledger.ShadowRecord). A notice already in the
// ledger is not one it would claim.
func (p *Pass) Shadow(ctx context.Context) (ShadowSummary, error) {
	start := p.cfg.Clock.Now()
	out := ShadowSummary{RunID: p.cfg.RunID, Shadow: true}
	inv := &invalidLog{seen: map[string]bool{}, log: p.log}
	for _, group := range p.sels[notice.ChannelEmail] {
		for _, sel := range group {
			list := func(after *string) ([]subscription.Row, error) {
				return p.src.listOpen(ctx, p.db, sel, p.cfg.Now, nil, after, p.cfg.BatchSize)
			}
			if err := subscription.EachRowPage(p.cfg.BatchSize, list, func(rows []subscription.Row) error {
				n, err := ledger.ShadowRecord(ctx, p.db, p.cfg.RunID, p.cfg.Now, p.shadowPage(sel, rows, inv, &out))
				out.Recorded += n
				return err
			}); err != nil {
				return out, err
			}
		}
	}
	out.Eligible = out.WouldClaim + out.WouldDefer
	out.DurationMS = p.cfg.Clock.Now().Sub(start).Milliseconds()
	p.log.Info().Int("would_claim", out.WouldClaim).Int("recorded", out.Recorded).
		Msg("shadow pass: nothing claimed in the ledger, nothing sent")
	return out, nil
}

// shadowPage returns the notices of one page of a group's open rows that
// a pass would claim now, each with its window, and counts the page into
// out.
func (p *Pass) shadowPage(sel selection, rows []subscription.Row, inv *invalidLog, out *ShadowSummary) []ledger.Shadowed {
	var ss []ledger.Shadowed
	w := sel.window()
	for _, r := range rows {
		switch v := p.classify(p.content, r, ask{sel: sel, channel: notice.ChannelEmail}); v.is {
		case invalid:
			if inv.note(r.ID, sel.kind, v.reason) {
				out.Invalid++
			}
		case deferred:
			out.WouldDefer++
		case dueNow:
			p.derive(&v.dn)
			out.WouldClaim++
			ss = append(ss, ledger.Shadowed{Claim: v.dn.claim, OpensAt: w.Opens(v.dn.n.AnchorAt, p.content.ZoneOf(r)), ClosesAt: v.dn.claim.WindowClosesAt})
		}
	}
	return ss
}

// window is sel's window as the policy writes it.
func (sel selection) window() policy.Window {
	w := policy.Window{OpenBefore: policy.Duration(sel.open), CloseBefore: policy.Duration(sel.close)}
	if sel.due != nil {
		w.Due = sel.due.rule
	}
	return w
}
