package scan

import (
	"context"

	"scan/internal/ledger"
	"scan/internal/notice"
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
	c, inv := &counters{}, &invalidLog{seen: map[string]bool{}, log: p.log}
	for _, group := range p.sels[notice.ChannelEmail] {
		for _, sel := range group {
			w := sel.Policy()
			err := p.walkStream(ctx, p.db, &stream{sel: sel}, nil, inv, c, func(pg page) error {
				ss := make([]ledger.Shadowed, 0, len(pg.cands))
				for _, cd := range pg.cands {
					ss = append(ss, ledger.Shadowed{Claim: cd.claim, OpensAt: w.Opens(cd.n.AnchorAt, cd.n.TimeZone), ClosesAt: cd.claim.WindowClosesAt})
				}
				n, err := ledger.ShadowRecord(ctx, p.db, p.cfg.RunID, p.cfg.Now, ss)
				out.Recorded, out.WouldClaim, out.WouldDefer = out.Recorded+n, out.WouldClaim+len(ss), out.WouldDefer+pg.quiet
				return err
			})
			if err != nil {
				return out, err
			}
		}
	}
	out.Invalid = c.Invalid
	out.Eligible = out.WouldClaim + out.WouldDefer
	out.DurationMS = p.cfg.Clock.Now().Sub(start).Milliseconds()
	p.log.Info().Int("would_claim", out.WouldClaim).Int("recorded", out.Recorded).
		Msg("shadow pass: nothing claimed in the ledger, nothing sent")
	return out, nil
}
