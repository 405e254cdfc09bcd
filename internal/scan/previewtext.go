package scan

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/message"
	"scan/internal/notice"
	"scan/internal/policy"
)

// SMSPreview is the sms channel's text of a Preview, for a kind whose
// channels include sms: the body as a pass would send it, its encoding
// (message.GSM7 or message.UCS2) and how many segments a phone receives
// (each billed by Twilio as one).
type SMSPreview struct {
	Text     string
	Encoding string
	Segments int
	// Invalid says why a pass would not text this row ("" when it
	// would): no usable phone number, or the content the kind requires.
	Invalid string
}

// previewText adds to p the sms text subscription id would get, for a
// kind whose channels include sms. It reads the source (the row) and
// writes nothing.
func (p *Pass) previewText(ctx context.Context, db sqlx.QueryerContext, id string, k policy.Kind, pv *Preview) error {
	if !k.HasSMS() {
		return nil
	}
	r, err := p.src.Get(ctx, db, k.AnchorColumn(), id)
	if err != nil {
		return err
	}
	if r.PeriodStart == nil || r.RenewsAt == nil || r.AnchorAt == nil {
		return nil // pv says why (Invalid)
	}
	t := notice.Tuple{SubscriptionID: r.ID, PeriodStart: *r.PeriodStart, Kind: k.Kind, Revision: r.Revision}
	n := notice.Notice{Key: p.keyer.ChannelKey(t, notice.ChannelSMS), Tuple: t, RenewsAt: *r.RenewsAt, AnchorAt: *r.AnchorAt,
		Name: deref(r.Name), Plan: deref(r.Plan), CancelToken: p.keyer.CancelToken(t), ClaimedAt: p.cfg.Now}
	sp := &SMSPreview{}
	if phone, err := notice.NormalizePhone(deref(r.Phone)); err != nil {
		sp.Invalid = ledger.ReasonNoAddress
	} else {
		n.To = phone
	}
	if reason, _ := p.content.fill(r, k, &n); reason != "" {
		sp.Invalid = reason
		pv.SMS = sp
		return nil
	}
	body, err := p.renderer.RenderSMS(n)
	if err != nil {
		return err
	}
	sp.Text = body
	sp.Encoding, sp.Segments = message.SMSSegments(body)
	pv.SMS = sp
	if sp.Invalid == "" && len(k.Channels) == 1 && addressReason(pv.Invalid) {
		// An sms-only kind: the row's email is not its concern.
		pv.Invalid = ""
		pv.Due = deref(r.Status) == "active" && pv.inWindow(p.cfg.Now) && pv.Ledger == ""
		pv.Deferred = pv.Due && p.content.defers(n.TimeZone, r.AnchorAt.Add(-time.Duration(k.WindowFor(deref(r.Jurisdiction)).CloseBefore)))
	}
	return nil
}

// addressReason reports whether reason (validate's) is about the row's
// email address only.
func addressReason(reason string) bool {
	return reason == "no email" || strings.HasPrefix(reason, "email: ")
}
