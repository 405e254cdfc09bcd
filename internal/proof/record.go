package proof

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
)

// Record is a notice's proof as <key prefix>.json holds it and the PDF
// shows it. It carries no address in the clear.
type Record struct {
	Key            string `json:"key"`
	KeyPrefix      string `json:"key_prefix"`
	SubscriptionID string `json:"subscription_id"`
	Kind           string `json:"kind"`
	PeriodStart    string `json:"period_start"`
	Revision       int    `json:"revision"`
	Channel        string `json:"channel"`
	State          string `json:"state"`
	Delivery       string `json:"delivery"` // delivered, undeliverable, unconfirmed

	// The window the notice was due in: the rule its deadline used, the
	// zone, the charge it announced and when the window closed.
	Rule           string     `json:"rule,omitempty"`
	TimeZone       string     `json:"time_zone,omitempty"`
	RenewsAt       *time.Time `json:"renews_at,omitempty"`
	WindowClosesAt *time.Time `json:"window_closes_at,omitempty"`
	// Jurisdiction is the policy's jurisdiction whose window is the rule
	// recorded ("" when the kind's default window was), and LegalLead the
	// lead time its law asks, when the policy names one.
	Jurisdiction string     `json:"jurisdiction"`
	LegalLead    *LegalLead `json:"legal_lead,omitempty"`
	// LeadBeforeCharge is how long before the charge the provider took it.
	LeadBeforeCharge string `json:"lead_before_charge,omitempty"`

	Attempts []Attempt         `json:"attempts"`
	Evidence []ledger.Evidence `json:"evidence"`

	To             string     `json:"to_masked"`
	Subject        string     `json:"subject,omitempty"`
	MessageID      string     `json:"message_id,omitempty"`
	DeliveredAt    *time.Time `json:"delivered_at,omitempty"`
	MessageSHA256  string     `json:"message_sha256"`
	MessageBytes   int        `json:"message_bytes"`
	DigestVerified bool       `json:"digest_verified"`
	GeneratedAt    time.Time  `json:"generated_at"`

	text string // the notice's text as the customer read it (the PDF's)
}

// LegalLead is the lead time a jurisdiction's law asks of a notice.
type LegalLead struct {
	Min       string `json:"min"`
	Max       string `json:"max"`
	Satisfied bool   `json:"satisfied"`
}

// Attempt is one attempt whose message the ledger keeps: the current one
// (the ledger row's: sender, times, provider id, run id) and each earlier
// one (notice_message's, sql/0036: its attempt, digest and size; the row
// keeps the rest of the current attempt only). Verification says whether
// its message was rebuilt to the digest recorded at send time
// ("verified") or was kept before sql/0041 with no digest
// (ledger.Unverifiable), never verified.
type Attempt struct {
	Attempt      int        `json:"attempt"`
	Sender       string     `json:"sender,omitempty"`
	ClaimedAt    time.Time  `json:"claimed_at,omitzero"`
	SentAt       *time.Time `json:"sent_at,omitempty"`
	ProviderID   string     `json:"provider_id,omitempty"`
	Digest       string     `json:"message_sha256,omitempty"`
	MessageBytes int        `json:"message_bytes"`
	Verification string     `json:"verification"`
	RunID        string     `json:"run_id,omitempty"`
}

// verified is an Attempt's Verification when its message hashes to its
// digest.
const verified = "verified"

// messagesOf returns r's current attempt's message and its earlier
// attempts' (ledger.EarlierMessages), each verified against its digest
// where one was kept: an error naming the notice and the attempt when one
// does not verify or cannot be read.
func messagesOf(ctx context.Context, db sqlx.QueryerContext, r ledger.Row) ([]byte, []ledger.KeptAttempt, error) {
	msg, err := ledger.MessageOf(ctx, db, r)
	if err != nil {
		return nil, nil, err
	}
	earlier, err := ledger.EarlierMessages(ctx, db, r)
	if err != nil {
		return nil, nil, err
	}
	return msg, earlier, nil
}

// attempts lists r's kept attempts by number: earlier then current (msg).
func attempts(r ledger.Row, msg []byte, earlier []ledger.KeptAttempt) []Attempt {
	out := make([]Attempt, 0, len(earlier)+1)
	for _, a := range earlier {
		v := ledger.Unverifiable
		if a.Verified() {
			v = verified
		}
		out = append(out, Attempt{Attempt: a.Attempt, Digest: hex.EncodeToString(a.Digest), MessageBytes: len(a.Message), Verification: v})
	}
	return append(out, Attempt{Attempt: r.Attempts, ClaimedAt: r.ClaimedAt, SentAt: r.SentAt, ProviderID: deref(r.ProviderID),
		Digest: r.Digest(), MessageBytes: len(msg), Verification: verified, RunID: r.RunID, Sender: senderOf(r)})
}

// newRecord builds a verified notice's record: msg is its message, which
// hashes to r's digest, and earlier its earlier attempts' kept messages.
func newRecord(r ledger.Row, ev []ledger.Evidence, msg []byte, earlier []ledger.KeptAttempt, pol *policy.Policy, now time.Time) Record {
	rec := Record{
		Key: r.NoticeKey, KeyPrefix: notice.Short(r.NoticeKey), SubscriptionID: r.SubscriptionID,
		Kind: r.Kind, PeriodStart: r.Period(), Revision: r.Revision, Channel: r.Channel, State: string(r.State),
		Rule: deref(r.Rule), TimeZone: deref(r.TimeZone), RenewsAt: r.RenewsAt, WindowClosesAt: r.WindowClosesAt,
		Evidence: ev, MessageSHA256: r.Digest(), MessageBytes: len(msg), DigestVerified: true, GeneratedAt: now.UTC(),
		MessageID: deref(r.MessageID),
	}
	if rec.Evidence == nil {
		rec.Evidence = []ledger.Evidence{}
	}
	rec.Attempts = attempts(r, msg, earlier)
	rec.Delivery = delivery(r, ev, &rec)
	if r.Channel == notice.ChannelSMS {
		rec.To, rec.text = "(an sms body names no recipient; the ledger keeps no number)", string(msg)
	} else {
		rec.To, rec.Subject, rec.text = readEmail(msg)
	}
	rec.Jurisdiction, rec.LegalLead = legal(pol, r)
	if r.SentAt != nil && r.RenewsAt != nil {
		lead := r.RenewsAt.Sub(*r.SentAt)
		rec.LeadBeforeCharge = days(lead)
		if rec.LegalLead != nil {
			rec.LegalLead.Satisfied = satisfies(pol, r, rec.Jurisdiction, lead)
		}
	}
	return rec
}

// delivery says what became of the kept attempt and sets rec.DeliveredAt.
func delivery(r ledger.Row, ev []ledger.Evidence, rec *Record) string {
	if r.State != ledger.Sent && r.State != ledger.Failed {
		return ""
	}
	out := "unconfirmed"
	for _, e := range ev {
		if e.Attempt != r.Attempts {
			continue
		}
		switch e.Kind {
		case ledger.KindDelivered:
			at := e.RecordedAt
			if e.At != nil {
				at = *e.At
			}
			rec.DeliveredAt, out = &at, "delivered"
		case ledger.KindBounceHard, ledger.KindNotSent:
			return "undeliverable"
		}
	}
	return out
}

// senderOf returns the sender that took r's attempt where the ledger
// tells: twilio for an sms (its only sender), outbox by its receipt; ""
// for an email (this ledger does not record which sender took it; the
// provider id identifies the message at the provider).
func senderOf(r ledger.Row) string {
	switch {
	case r.Channel == notice.ChannelSMS:
		return "twilio"
	case strings.HasPrefix(deref(r.ProviderID), "outbox:"):
		return "outbox"
	}
	return ""
}

// legal finds the jurisdiction whose window of r's kind is the rule r's
// deadline used, and the lead its law asks there.
func legal(pol *policy.Policy, r ledger.Row) (string, *LegalLead) {
	if pol == nil || r.Rule == nil {
		return "", nil
	}
	k, ok := pol.Kind(r.Kind)
	if !ok {
		return "", nil
	}
	j := ""
	for _, cand := range k.Overrides() {
		if k.WindowFor(cand).Rule(k.AnchorColumn()) == *r.Rule {
			j = cand
			break
		}
	}
	l, ok := pol.LegalFor(k, j)
	if !ok {
		return j, nil
	}
	return j, &LegalLead{Min: policy.FormatDuration(time.Duration(l.MinLead)), Max: policy.FormatDuration(time.Duration(l.MaxLead))}
}

func satisfies(pol *policy.Policy, r ledger.Row, j string, lead time.Duration) bool {
	k, _ := pol.Kind(r.Kind)
	l, _ := pol.LegalFor(k, j)
	return lead >= time.Duration(l.MinLead) && lead <= time.Duration(l.MaxLead)
}

// readEmail returns a MIME message's recipient (masked), subject and
// plain text (its first text/plain part, decoded; the raw message when it
// cannot be read).
func readEmail(msg []byte) (to, subject, text string) {
	m, err := mail.ReadMessage(bytes.NewReader(msg))
	if err != nil {
		return "", "", string(msg)
	}
	dec := new(mime.WordDecoder)
	subject, err = dec.DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		subject = m.Header.Get("Subject")
	}
	if a, err := mail.ParseAddress(m.Header.Get("To")); err == nil {
		to = MaskEmail(a.Address)
	}
	return to, subject, plainText(m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), m.Body)
}

func plainText(ctype, cte string, body io.Reader) string {
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err != nil {
				return ""
			}
			if t := plainText(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p); t != "" {
				return t
			}
		}
	}
	if mt != "text/plain" {
		return ""
	}
	if strings.EqualFold(cte, "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	b, _ := io.ReadAll(body)
	return string(b)
}

// days formats a lead time as days, hours and minutes (25d14h52m).
func days(d time.Duration) string {
	d = d.Round(time.Minute)
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	day := d / (24 * time.Hour)
	d -= day * 24 * time.Hour
	return fmt.Sprintf("%s%dd%dh%02dm", neg, day, d/time.Hour, (d%time.Hour)/time.Minute)
}

// MaskEmail masks an address as the proof shows it: the local part's
// first character, then ***, then the domain (j***@example.com).
func MaskEmail(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 1 {
		return "***"
	}
	_, n := utf8.DecodeRuneInString(addr)
	return addr[:n] + "***" + addr[at:]
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
