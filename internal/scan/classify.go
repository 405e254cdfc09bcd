package scan

import (
	"time"

	"scan/internal/address"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/subscription"
)

// One classifier of a due row (issue 28): the email stage's pass, its
// deferred count and the dry run, the shadow pass, the sms stage and the
// missed-window paths all ask classify what a source row is for one
// selection, and keep only what is their own: counting, admitting,
// deriving, claiming, recording.

// verdictIs is what a row is for one selection.
type verdictIs int

const (
	// notDue: not due for this selection now (a NULL anchor, a due rule
	// not yet open in the row's zone, a retry row its current window no
	// longer holds). Never counted.
	notDue verdictIs = iota
	// invalid: the row cannot make the notice; verdict.reason says why
	// (never the address).
	invalid
	// unreachable: an sms notice without a usable (E.164) phone number.
	unreachable
	// deferred: the quiet hours hold it for a later pass.
	deferred
	// dueNow: due now on the asked channel; verdict.dn is the notice.
	dueNow
	// closed: the missed-window path's: a closed window's row that makes
	// a notice key; verdict.dn.claim records it missed.
	closed
)

// ask is what a row is classified for.
type ask struct {
	sel selection
	// retry: a ledger row in retry, re-checked against the current window
	// of its row's jurisdiction (which then gives the rule and the group).
	retry bool
	// channel: the notice's channel (notice.ChannelEmail or ChannelSMS).
	channel string
	// missed: the row was read as its window closed (subscription.At.ClosedPage): only
	// its tuple is checked, and every other check is left out.
	missed bool
}

// verdict is classify's answer.
type verdict struct {
	is     verdictIs
	reason string // invalid's
	// dn is the notice (dueNow and deferred, and sms's invalid content
	// and unreachable with the claim only; closed: the claim only). Its
	// key, Message-ID and tokens are not derived: derive is the caller's
	// (costly; a row the caller skips for now is never derived).
	dn due
	// keyed: the row makes a notice tuple (dn.claim names it), whatever
	// the verdict (the sms stage's email step takes it).
	keyed bool
	// sel is the key of the window group the notice belongs to (a retry
	// row's: its jurisdiction's).
	sel string
}

// classify says what row r is for a: its steps, in order, are the due
// checks (anchor, retry window, due rule), the row's validity (tuple,
// address, content), then the quiet hours. c is the caller's content
// resolver (the sms stage has its own: content is not safe for
// concurrent use).
func (p *Pass) classify(c *content, r subscription.Row, a ask) verdict {
	switch {
	case a.missed:
		return p.classifyClosed(c, r, a)
	case a.channel == notice.ChannelSMS:
		return p.classifyText(c, r, a)
	}
	sel, w, v := a.sel, a.sel.Policy(), verdict{sel: a.sel.Key()}
	rule := sel.Rule
	if r.RenewsAt != nil && r.AnchorAt == nil {
		return v // a NULL anchor: not due for this kind (not invalid)
	}
	if a.retry {
		k := p.kinds[sel.Kind]
		j := deref(r.Jurisdiction)
		w = k.WindowFor(j)
		if r.RenewsAt == nil || !w.Contains(*r.AnchorAt, p.cfg.Now, c.ZoneOf(r)) {
			return v // no longer due under its current row; expires later
		}
		rule = w.Rule(k.AnchorColumn())
		if _, ok := k.ByJurisdiction[j]; !ok {
			j = ""
		}
		v.sel = selection{Group: subscription.Group{Kind: sel.Kind, Jurisdiction: j}}.Key()
	} else if sel.Due != nil && r.AnchorAt != nil && !sel.Due.Open(*r.AnchorAt, c.ZoneOf(r)) {
		return v // read with the superset of a due rule: not yet due in its zone
	}
	dn, reason := p.validate(c, r, sel.Kind, w)
	dn.claim.Rule = rule
	v.dn, v.keyed = dn, reason == ""
	switch {
	case reason != "":
		v.is, v.reason = invalid, reason
	case c.Defers(dn.n.TimeZone, dn.claim.WindowClosesAt):
		v.is = deferred // a later pass sends it, outside the quiet hours
	default:
		v.is = dueNow
	}
	return v
}

// classifyClosed is the missed-window path's: a closed window's row is
// recorded missed when it makes a notice key (its tuple), keyed for
// a.channel; nothing else about it is checked (a row that cannot make a
// key is left out, not counted invalid).
func (p *Pass) classifyClosed(c *content, r subscription.Row, a ask) verdict {
	v := verdict{sel: a.sel.Key()}
	if r.ID == "" || len(r.ID) > notice.MaxSubscriptionIDLen || r.PeriodStart == nil || r.RenewsAt == nil || r.AnchorAt == nil {
		return v
	}
	v.is, v.keyed = closed, true
	v.dn.claim = r.Claim(a.sel.Kind, *r.AnchorAt, a.sel.Close)
	v.dn.claim.Rule, v.dn.claim.TimeZone = a.sel.Rule, c.ZoneOf(r).String()
	v.dn.claim.Key = p.keyer.ChannelKey(v.dn.claim.Tuple, a.channel)
	return v
}

// classifyText is the sms stage's: a row that makes a notice tuple and is
// due (its due rule, on its anchor or else renews_at) is unreachable
// without a usable phone number, invalid when its content is, deferred by
// the quiet hours, or due by sms. The notice's key and digest are the
// caller's (sweepNotice: the stage's own keyer and hasher).
func (p *Pass) classifyText(c *content, r subscription.Row, a ask) verdict {
	sel, v := a.sel, verdict{sel: a.sel.Key()}
	if r.RenewsAt == nil || r.PeriodStart == nil || r.ID == "" || r.Revision < 0 {
		return verdict{is: invalid, reason: "no notice tuple", sel: v.sel}
	}
	anchor, zone := r.Anchor(), c.ZoneOf(r)
	if sel.Due != nil && !sel.Due.Open(anchor, zone) {
		return v // read with the superset of a due rule: not yet due in its zone
	}
	k := p.kinds[sel.Kind]
	v.keyed = true
	v.dn.claim = r.Claim(sel.Kind, anchor, time.Duration(k.WindowFor(sel.Jurisdiction).CloseBefore))
	v.dn.claim.Rule, v.dn.claim.TimeZone = sel.Rule, zone.String()
	phone, err := notice.NormalizePhone(deref(r.Phone))
	if err != nil {
		v.is, v.reason = unreachable, "phone"
		return v
	}
	v.dn.n = r.Notice(v.dn.claim.Tuple, anchor, phone, textDomain(a.channel))
	v.dn.addr = phone
	if reason, _ := c.Fill(r, k, &v.dn.n); reason != "" {
		v.is, v.reason = invalid, reason
		return v
	}
	if c.Defers(v.dn.n.TimeZone, v.dn.claim.WindowClosesAt) {
		v.is = deferred
		return v
	}
	// A text cannot arrive late: it carries the last instant it is of use
	// (Twilio's ValidityPeriod), and one with less than the least left
	// waits for a later pass, or for its window to close (missed).
	v.dn.n.DeliverBy = c.DeliverBy(v.dn.n.TimeZone, v.dn.claim.WindowClosesAt)
	if v.dn.n.DeliverBy.Sub(c.now) < textMinValidity {
		v.is = deferred
		return v
	}
	v.is = dueNow
	return v
}

// validate turns a source row into a due email notice, or returns a
// reason the row is invalid (never containing the address). The
// notice's key and what else comes from the secret are left to derive.
func (p *Pass) validate(c *content, r subscription.Row, kind string, w policy.Window) (due, string) {
	if reason := r.TupleReason(); reason != "" {
		return due{}, reason
	}
	j := deref(r.Jurisdiction)
	if j != "" && p.cfg.Policy.UnknownJurisdiction == policy.UnknownInvalid && !p.cfg.Policy.KnownJurisdiction(j) {
		return due{}, "jurisdiction not in the policy"
	}
	if r.Email == nil || *r.Email == "" {
		return due{}, "no email"
	}
	anchor := r.Anchor()
	dn := due{claim: r.Claim(kind, anchor, time.Duration(w.CloseBefore))}
	addr, err := address.Parse(*r.Email)
	if err != nil {
		// Keyed all the same: with no other channel the notice waits in
		// retry as invalid_address (readPage's bad).
		return dn, "email: " + err.Error()
	}
	// Name reaches the To header and plan the Subject: a line break (or
	// any control character, which Render would refuse after the claim)
	// makes the row invalid before anything is claimed.
	if !address.ValidHeaderValue(deref(r.Name)) {
		return due{}, "CR, LF or control character in name"
	}
	if !address.ValidHeaderValue(deref(r.Plan)) {
		return due{}, "CR, LF or control character in plan"
	}
	to, domain := addr.Email, addr.Domain
	if p.cfg.RedirectTo != "" {
		to = p.cfg.RedirectTo // the original domain's bucket still applies
	}
	dn.n = r.Notice(dn.claim.Tuple, anchor, to, domain)
	dn.claim.Domain = domain
	reason, fallbacks := c.Fill(r, p.kinds[kind], &dn.n)
	if reason != "" {
		return due{}, reason
	}
	dn.fallbacks = fallbacks
	dn.claim.TimeZone = dn.n.TimeZone.String()
	if p.cfg.RedirectTo == "" {
		dn.addr, _ = notice.NormalizeEmail(addr.Email)
	}
	return dn, ""
}
