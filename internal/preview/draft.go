package preview

import (
	"context"
	"strings"
	"time"

	"scan/internal/ledger"
	"scan/internal/message"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/scan"
)

// Preview is one kind's notice for one subscription at a pass's now.
type Preview struct {
	Kind string
	// Message is the rendered notice; nil when the row is invalid for
	// this kind (Invalid says why).
	Message *notice.Message
	Invalid string
	// Due: its window is open now and the ledger has no row for it, so a
	// pass now would claim it (unless Deferred).
	Due bool
	// Deferred: the quiet hours would hold it for a later pass.
	Deferred bool
	// Ledger is the state of its ledger row, "" when it has none.
	Ledger ledger.State
	// Opens and Closes bound its window (zero when its anchor is NULL).
	Opens, Closes time.Time
	// SMS is the sms channel's text, for a kind whose channels include
	// sms; nil otherwise.
	SMS *SMSPreview
}

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

// Of renders the notices subscription id would get from sc, a pass at
// now: of each kind named, or, with none named, of each kind whose
// window is open now (scan.Pass.Draft: the pass's own classifier and
// keys). It reads the source and the ledger and writes nothing; an id
// the source does not have is scan.ErrNoSubscription.
func Of(ctx context.Context, sc *scan.Pass, r scan.Renderer, pol *policy.Policy, now time.Time, id string, kinds []string) ([]Preview, error) {
	all := len(kinds) == 0
	if all {
		for _, k := range pol.Notices {
			kinds = append(kinds, k.Kind)
		}
	}
	var out []Preview
	for _, kind := range kinds {
		d, err := sc.Draft(ctx, id, kind)
		if err != nil {
			return nil, err
		}
		k, _ := pol.Kind(kind) // Draft refused a kind the policy does not name
		pv, err := render(d, k, r, now)
		if err != nil {
			return nil, err
		}
		if all && !pv.inWindow(now) {
			continue // not this kind's time
		}
		out = append(out, pv)
	}
	return out, nil
}

func (p Preview) inWindow(now time.Time) bool {
	return !now.Before(p.Opens) && now.Before(p.Closes)
}

// render renders d, the notice of kind k, and says what a pass at now
// would do with it.
func render(d scan.Draft, k policy.Kind, r scan.Renderer, now time.Time) (Preview, error) {
	pv := Preview{Kind: k.Kind, Invalid: d.Invalid, Ledger: d.Ledger, Opens: d.Opens, Closes: d.Closes}
	due := func(quiet bool) {
		pv.Due = d.Row.Status != nil && *d.Row.Status == "active" && pv.inWindow(now) && pv.Ledger == ""
		pv.Deferred = pv.Due && quiet
	}
	if d.Invalid == "" {
		due(d.Quiet)
		m, err := r.Render(d.Email)
		if err != nil {
			return pv, err
		}
		pv.Message = m
	}
	if d.Text == nil {
		return pv, nil
	}
	pv.SMS = &SMSPreview{Invalid: d.TextInvalid}
	if d.TextInvalid != "" {
		return pv, nil
	}
	body, err := r.RenderSMS(*d.Text)
	if err != nil {
		return pv, err
	}
	pv.SMS.Text = body
	pv.SMS.Encoding, pv.SMS.Segments = message.SMSSegments(body)
	if len(k.Channels) == 1 && addressReason(pv.Invalid) {
		// An sms-only kind: the row's email is not its concern.
		pv.Invalid = ""
		due(d.TextQuiet)
	}
	return pv, nil
}

// addressReason reports whether reason (a pass's) is about the row's
// email address only.
func addressReason(reason string) bool {
	return reason == "no email" || strings.HasPrefix(reason, "email: ")
}
