// Package policy loads and validates the notice policy: which kinds of
// notice exist, the window in which each may be sent (per jurisdiction),
// the legal lead-time bounds every window must respect, the job's cron
// schedule, and the send rates (pace.Limits, decoded here and required to
// limit). A Policy that Load or Default returns has been validated; a
// policy that cannot be met is refused with an error that names the kind
// and jurisdiction.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"net/mail"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"scan/internal/address"
	"scan/internal/clock"
	"scan/internal/notice"
	"scan/internal/pace"
	"scan/internal/provider"
)

// Unknown-jurisdiction modes.
const (
	// UnknownDefault sends to a jurisdiction the policy does not name inside
	// the kind's default window (the merchant's policy applies where no law
	// is configured). This is the default.
	UnknownDefault = "default"
	// UnknownInvalid counts such rows as invalid and claims nothing.
	UnknownInvalid = "invalid"
)

// Duration is a time.Duration that YAML writes as Go's units plus "d" for
// days ("72h", "30d", "1d12h").
type Duration time.Duration

var dayRe = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?)d`)

// ParseDuration parses Go duration syntax extended with a "d" (24h) unit.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	var convErr error
	expanded := dayRe.ReplaceAllStringFunc(s, func(m string) string {
		f, err := strconv.ParseFloat(strings.TrimSuffix(m, "d"), 64)
		if err != nil {
			convErr = err
			return m
		}
		return strconv.FormatFloat(f*24, 'f', -1, 64) + "h"
	})
	if convErr != nil {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	d, err := time.ParseDuration(expanded)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (use Go units plus d, e.g. 72h or 30d)", s)
	}
	return d, nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: duration must be a string such as 72h or 30d", n.Line)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// String formats d in days when it is a whole number of days.
func (d Duration) String() string { return FormatDuration(time.Duration(d)) }

// FormatDuration writes whole days as "Nd" and everything else as Go does.
func FormatDuration(d time.Duration) string {
	if d != 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// Window is when a notice may be sent, as lead times before renews_at: it
// opens OpenBefore before the charge and closes CloseBefore before it.
type Window struct {
	OpenBefore  Duration `yaml:"open_before"`
	CloseBefore Duration `yaml:"close_before"`
	// Due, when set (a kind's due:), opens the window instead of
	// OpenBefore: at a local time on a working day (issue 27).
	Due *Due `yaml:"-"`
}

// Opens returns when the window of a charge at renewsAt opens for a
// recipient in loc: renewsAt-OpenBefore, or the due rule's opening.
func (w Window) Opens(renewsAt time.Time, loc *time.Location) time.Time {
	if w.Due != nil {
		return w.Due.Opens(renewsAt, loc)
	}
	return renewsAt.Add(-time.Duration(w.OpenBefore))
}

// Contains reports whether now lies in the window of a charge at renewsAt
// for a recipient in loc: Opens(renewsAt, loc) <= now <
// renewsAt-CloseBefore.
func (w Window) Contains(renewsAt, now time.Time, loc *time.Location) bool {
	close := renewsAt.Add(-time.Duration(w.CloseBefore))
	return !now.Before(w.Opens(renewsAt, loc)) && now.Before(close)
}

// Rule is the window's rule as the ledger keeps it with each notice
// (issue 27): "72h..24h before renews_at", or the due rule's text and its
// close.
func (w Window) Rule(anchor string) string {
	if w.Due != nil {
		return w.Due.Rule(anchor) + "; closes " + w.CloseBefore.String() + " before"
	}
	return w.OpenBefore.String() + ".." + w.CloseBefore.String() + " before " + anchor
}

// Kind is one kind of notice and its windows.
type Kind struct {
	Kind           string            `yaml:"kind"`
	OpenBefore     Duration          `yaml:"open_before"`
	CloseBefore    Duration          `yaml:"close_before"`
	ByJurisdiction map[string]Window `yaml:"by_jurisdiction"`
	// Anchor names the source's timestamptz column the window is measured
	// from (issue 21). Default "renews_at".
	Anchor string `yaml:"anchor"`
	// Legal, when set, replaces the jurisdictions' legal bounds for this
	// kind (issue 21).
	Legal map[string]Legal `yaml:"legal"`
	// Due, when set, replaces OpenBefore (both set is an error): the
	// notice opens at a local time on a working day (issue 27). Windows
	// in ByJurisdiction keep their own open_before.
	Due *Due `yaml:"due"`
	// Channels are the channels the kind's notice may go by, in order
	// (issue 30): the next is used when the one before cannot reach the
	// customer while the window is open. Default [email]; this version
	// takes [email], [email, sms], [sms] (sms only: India's pre-debit
	// notices) and [sms, email] (email when sms cannot reach).
	Channels []string `yaml:"channels"`
	// ConfirmWithin, when set (issue 36), makes an email the provider
	// accepted but did not confirm delivered within this long go on to the
	// kind's next channel, at the next pass while the window is open, as
	// an undeliverable one does. Only for [email, sms], and only with a
	// provider that reports delivery (not provider none; not the outbox
	// or http senders: CheckConfirmSender).
	ConfirmWithin Duration `yaml:"confirm_within"`
}

// SMSFirst reports whether the kind goes by sms first ([sms] or [sms,
// email]): the pass's sms stage is its primary stage, and an email notice
// is made for it only as EmailAfterSMS says.
func (k Kind) SMSFirst() bool { return len(k.Channels) > 0 && k.Channels[0] == notice.ChannelSMS }

// EmailAfterSMS reports whether the kind goes by email when sms cannot
// reach the customer ([sms, email]).
func (k Kind) EmailAfterSMS() bool {
	return slices.Equal(k.Channels, []string{notice.ChannelSMS, notice.ChannelEmail})
}

// HasSMS reports whether the kind may go by sms.
func (k Kind) HasSMS() bool { return slices.Contains(k.Channels, notice.ChannelSMS) }

// Default returns the kind's window for jurisdictions without an override.
func (k Kind) Default() Window { return Window{k.OpenBefore, k.CloseBefore, k.Due} }

// WindowFor returns the window that applies in jurisdiction j ("" for none).
func (k Kind) WindowFor(j string) Window {
	if w, ok := k.ByJurisdiction[j]; ok && j != "" {
		return w
	}
	return k.Default()
}

// Overrides returns the jurisdictions with their own window, sorted.
func (k Kind) Overrides() []string {
	out := make([]string, 0, len(k.ByJurisdiction))
	for j := range k.ByJurisdiction {
		out = append(out, j)
	}
	sort.Strings(out)
	return out
}

// Legal is a jurisdiction's lead-time rule: every notice must reach the
// customer at least MinLead and at most MaxLead before the charge.
type Legal struct {
	MinLead Duration `yaml:"min_lead"`
	MaxLead Duration `yaml:"max_lead"`
	// Requires lists the fields a notice in this jurisdiction must carry
	// (e.g. "amount"); a row lacking one is invalid, reason
	// "missing_<field>" (issue 21).
	Requires []string `yaml:"requires"`
}

// QuietHours is a daily span, "HH:MM" to "HH:MM" in the recipient's time
// zone, that may wrap midnight ("21:00" to "08:00").
type QuietHours struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`

	from, to int // minutes of the day, set by Validate
}

// Policy is the whole policy file.
type Policy struct {
	Schedule        string `yaml:"schedule"`
	MessageIDDomain string `yaml:"message_id_domain"`
	From            string `yaml:"from"`
	CancelURL       string `yaml:"cancel_url"`
	// TemplatesDir, when set, is a directory of message templates
	// (<kind>.subject.tmpl, <kind>.txt.tmpl, <kind>.html.tmpl, or default.*
	// for every kind) that override the embedded ones, file by file. A
	// relative path is relative to the working directory.
	TemplatesDir        string           `yaml:"templates_dir"`
	UnknownJurisdiction string           `yaml:"unknown_jurisdiction"`
	Notices             []Kind           `yaml:"notices"`
	Legal               map[string]Legal `yaml:"legal"`
	// Rate is the send rate policy: a bucket per recipient domain
	// (Default for every domain not listed) and a global ceiling. Validate
	// requires every bucket to limit (no zero rate or burst).
	Rate        pace.Limits `yaml:"rate"`
	Concurrency int         `yaml:"concurrency"`
	// Provider names the email provider behind the sender, so that every
	// message carries the header that provider turns into event data
	// with the notice key (see Providers). Default provider.None.
	Provider string `yaml:"provider"`
	// SES configures Amazon SES, for provider ses or sender ses.
	SES SES `yaml:"ses"`
	// Retention is how much ledger history `scan prune` keeps by default:
	// billing periods that started longer ago than this are removed.
	// Default 400d.
	Retention Duration `yaml:"retention"`
	// DefaultLocale (BCP 47) selects templates and formatting for a row
	// without a usable locale. Default "en" (issue 21).
	DefaultLocale string `yaml:"default_locale"`
	// DefaultTimeZone (IANA) formats dates for a row without a usable
	// time_zone. Default "UTC" (issue 21).
	DefaultTimeZone string `yaml:"default_time_zone"`
	// PreferencesURL, with "{token}", is the reminder-preferences page named
	// by List-Unsubscribe and List-Unsubscribe-Post (RFC 8058); never the
	// cancel link. Optional: without it there is no List-Unsubscribe
	// (issue 21).
	PreferencesURL string `yaml:"preferences_url"`
	// QuietHours, optional, defers a notice due inside them in the
	// recipient's time zone, unless its window closes first (issue 21).
	QuietHours *QuietHours `yaml:"quiet_hours"`
	// SMSMaxSegments bounds an sms body, in segments (each billed as one
	// message): a template whose sample exceeds it is refused at load.
	// Default DefaultSMSMaxSegments (issue 30).
	SMSMaxSegments int `yaml:"sms_max_segments"`
}

// DefaultSMSMaxSegments is sms_max_segments' default.
const DefaultSMSMaxSegments = 3

// UsesSMS reports whether any kind goes by sms.
func (p *Policy) UsesSMS() bool {
	for _, k := range p.Notices {
		if k.HasSMS() {
			return true
		}
	}
	return false
}

// Providers lists the accepted values of provider, in the order the
// documentation gives them: provider.None, then the email providers.
var Providers = provider.Strings(append([]provider.Name{provider.None}, provider.Email...)...)

// SES is the Amazon SES part of the policy.
type SES struct {
	// ConfigurationSet is the configuration set every message is sent
	// with (its event destinations publish the events reconcile reads).
	// Optional; up to 64 letters, digits, '-' or '_'.
	ConfigurationSet string `yaml:"configuration_set"`
}

var configSetRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Error is a policy that cannot be met or parsed. Field names the setting
// (e.g. "notices[renewal_notice_t72].by_jurisdiction[US-CA]").
type Error struct {
	Field string
	Msg   string
}

// Error is one line: a line break that the file put into a key or value
// is shown escaped.
func (e *Error) Error() string { return oneLine.Replace("policy: " + e.Field + ": " + e.Msg) }

var oneLine = strings.NewReplacer("\r", `\r`, "\n", `\n`)

const defaultYAML = `
schedule: "0 2 * * *"
message_id_domain: notices.example.com
from: "Example Box <notices@example.com>"
cancel_url: "https://example.com/cancel?token={token}"
unknown_jurisdiction: default
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
rate:
  default: {per_second: 5, burst: 5}
  global: {per_second: 100, burst: 100}
concurrency: 16
provider: none
retention: 400d
`

// Default returns the built-in policy (used when no file is given).
func Default() *Policy { return defaultAt(clock.System{}.Now()) }

func defaultAt(now time.Time) *Policy {
	p, err := ParseAt(strings.NewReader(defaultYAML), now)
	if err != nil {
		panic("built-in policy is invalid: " + err.Error())
	}
	return p
}

// Load is LoadAt at the system clock's now.
func Load(path string) (*Policy, error) { return LoadAt(path, clock.System{}.Now()) }

// LoadAt reads and validates the policy file at path at the instant now
// (see Validate); "" means the built-in policy (Default).
func LoadAt(path string, now time.Time) (*Policy, error) {
	if path == "" {
		return defaultAt(now), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Field: "config", Msg: err.Error()}
	}
	defer f.Close()
	return ParseAt(f, now)
}

// MaxSize is the largest policy file Parse reads.
const MaxSize = 1 << 20

// Parse is ParseAt at the system clock's now.
func Parse(r io.Reader) (*Policy, error) { return ParseAt(r, clock.System{}.Now()) }

// ParseAt decodes a policy strictly (unknown keys are errors), fills the
// built-in defaults for missing settings and validates it at the instant
// now (see Validate). A setting given explicitly is kept as written:
// "per_second: 0" is refused, not replaced by the default.
func ParseAt(r io.Reader, now time.Time) (*Policy, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, &Error{Field: "config", Msg: err.Error()}
	}
	if len(data) > MaxSize {
		return nil, &Error{Field: "config", Msg: fmt.Sprintf("policy file is larger than %d bytes", MaxSize)}
	}
	// Defaults of the settings whose zero value is itself invalid: the
	// decoder overwrites only what the file sets.
	p := Policy{
		Rate: pace.Limits{Default: pace.Bucket{PerSecond: 5, Burst: 5}, Global: pace.Bucket{PerSecond: 100, Burst: 100},
			SMS: pace.Bucket{PerSecond: 1, Burst: 1}},
		Concurrency:    16,
		SMSMaxSegments: DefaultSMSMaxSegments,
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
		return nil, &Error{Field: "config", Msg: decodeMsg(err)}
	}
	// A second document would otherwise be ignored without a word: a
	// policy pasted under another, or two files concatenated.
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &Error{Field: "config", Msg: decodeMsg(err)}
		}
		if len(more.Content) > 0 && more.Content[0].Tag != "!!null" {
			return nil, &Error{Field: "config", Msg: fmt.Sprintf("line %d: a second YAML document (after '---'): the policy must be one document", more.Content[0].Line)}
		}
	}
	p.fillDefaults()
	if err := p.Validate(now); err != nil {
		return nil, err
	}
	return &p, nil
}

// decodeMsg turns a YAML decoding error into one line: the decoder lists
// every unknown key or mistyped value on its own line, in Go's type names.
func decodeMsg(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "yaml: ")
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		if k, _, ok := strings.Cut(m, " not found in type "); ok {
			m = k + " not found: unknown key (check its spelling and indentation)"
		}
		msgs[i] = m
	}
	return strings.Join(msgs, "; ")
}

func (p *Policy) fillDefaults() {
	if p.Schedule == "" {
		p.Schedule = "0 2 * * *"
	}
	if p.MessageIDDomain == "" {
		p.MessageIDDomain = "notices.example.com"
	}
	if p.From == "" {
		p.From = "Example Box <notices@example.com>"
	}
	if p.CancelURL == "" {
		p.CancelURL = "https://example.com/cancel?token={token}"
	}
	if p.UnknownJurisdiction == "" {
		p.UnknownJurisdiction = UnknownDefault
	}
	if p.Provider == "" {
		p.Provider = string(provider.None)
	}
	if p.Retention == 0 {
		p.Retention = Duration(DefaultRetention)
	}
	if p.Notices == nil {
		p.Notices = []Kind{{Kind: "renewal_notice_t72", OpenBefore: Duration(72 * time.Hour), CloseBefore: Duration(24 * time.Hour)}}
	}
	p.fillContentDefaults()
}

// CheckProduction refuses a policy that would show customers a sample
// value: from, cancel_url, message_id_domain or preferences_url left at (or copied from)
// the built-in example, whose domains are the reserved example.com,
// example.net, example.org or *.example (RFC 2606). cmd/scan calls it
// with SCAN_ENVIRONMENT=production: a customer must never get an
// example.com cancellation link.
func (p *Policy) CheckProduction() error {
	fromDomain := ""
	if a, err := mail.ParseAddress(p.From); err == nil {
		_, fromDomain, _ = strings.Cut(a.Address, "@")
	}
	cancelHost := ""
	if u, err := url.Parse(strings.ReplaceAll(p.CancelURL, "{token}", "t")); err == nil {
		cancelHost = u.Hostname()
	}
	fields := []struct{ field, value, domain string }{
		{"from", p.From, fromDomain},
		{"cancel_url", p.CancelURL, cancelHost},
		{"message_id_domain", p.MessageIDDomain, p.MessageIDDomain},
	}
	if p.PreferencesURL != "" {
		prefHost := ""
		if u, err := url.Parse(strings.ReplaceAll(p.PreferencesURL, "{token}", "t")); err == nil {
			prefHost = u.Hostname()
		}
		fields = append(fields, struct{ field, value, domain string }{"preferences_url", p.PreferencesURL, prefHost})
	}
	for _, f := range fields {
		if f.domain == "" || isExampleDomain(f.domain) {
			return &Error{Field: f.field, Msg: fmt.Sprintf("%q is a sample value: with SCAN_ENVIRONMENT=production set it to your own in the policy file (SCAN_CONFIG)", f.value)}
		}
	}
	return nil
}

// isExampleDomain reports whether d is one of the domains RFC 2606
// reserves for examples, or under one.
func isExampleDomain(d string) bool {
	d = strings.TrimSuffix(strings.ToLower(d), ".")
	if d == "example" || strings.HasSuffix(d, ".example") {
		return true
	}
	for _, ex := range []string{"example.com", "example.net", "example.org"} {
		if d == ex || strings.HasSuffix(d, "."+ex) {
			return true
		}
	}
	return false
}

// Validate checks that the policy can be met: windows that open before they
// close, inside every jurisdiction's legal lead, and at least as wide as the
// longest gap between two firings of the schedule (else a subscription
// could fall between two passes and never be scanned inside its window).
// The gaps are those of the year that starts at now (MaxGap): a year, so
// that both DST changes of the schedule's zone show. Validate changes
// nothing in p but the private fields it derives (a due rule's calendar
// and measured leads, the quiet hours' minutes).
func (p *Policy) Validate(now time.Time) error {
	gap, err := MaxGap(p.Schedule, now.UTC())
	if err != nil {
		return &Error{Field: "schedule", Msg: err.Error()}
	}
	if strings.ContainsAny(p.MessageIDDomain, "<>@ \r\n\t") {
		return &Error{Field: "message_id_domain", Msg: "must be a bare domain such as notices.example.com"}
	}
	if strings.ContainsAny(p.From, "\r\n") || !strings.Contains(p.From, "@") {
		return &Error{Field: "from", Msg: `must be an address such as "Example Box <notices@example.com>"`}
	}
	if p.TemplatesDir != "" {
		if fi, err := os.Stat(p.TemplatesDir); err != nil || !fi.IsDir() {
			return &Error{Field: "templates_dir", Msg: fmt.Sprintf("%q is not a readable directory", p.TemplatesDir)}
		}
	}
	if !strings.Contains(p.CancelURL, "{token}") {
		return &Error{Field: "cancel_url", Msg: "must contain {token}"}
	}
	if p.UnknownJurisdiction != UnknownDefault && p.UnknownJurisdiction != UnknownInvalid {
		return &Error{Field: "unknown_jurisdiction", Msg: `must be "default" or "invalid"`}
	}
	if !slices.Contains(Providers, p.Provider) {
		return &Error{Field: "provider", Msg: fmt.Sprintf("%q is not one of %s", p.Provider, strings.Join(Providers, ", "))}
	}
	if cs := p.SES.ConfigurationSet; cs != "" && !configSetRe.MatchString(cs) {
		return &Error{Field: "ses.configuration_set", Msg: "must be 1 to 64 letters, digits, '-' or '_'"}
	}
	if len(p.Notices) == 0 {
		return &Error{Field: "notices", Msg: "at least one kind is required"}
	}
	if err := p.validateContent(); err != nil {
		return err
	}
	for _, j := range sortedKeys(p.Legal) {
		if err := checkLegal("legal["+j+"]", j, p.Legal[j]); err != nil {
			return err
		}
	}
	if err := p.validateKinds(now, gap); err != nil {
		return err
	}
	if err := bucketError("rate.default", p.Rate.Default); err != nil {
		return err
	}
	if err := bucketError("rate.global", p.Rate.Global); err != nil {
		return err
	}
	if err := bucketError("rate.sms", p.Rate.SMS); err != nil {
		return err
	}
	if p.SMSMaxSegments < 1 || p.SMSMaxSegments > 10 {
		return &Error{Field: "sms_max_segments", Msg: fmt.Sprintf("%d: must be 1 to 10", p.SMSMaxSegments)}
	}
	for d, b := range p.Rate.Domains {
		if d == "" || d != strings.ToLower(d) {
			return &Error{Field: "rate.domains[" + d + "]", Msg: "domain must be non-empty and lower-case"}
		}
		// Buckets are keyed by the recipient's domain in lower-case ASCII
		// (IDNA) form; any other spelling would never match.
		if a, err := address.Parse("x@" + d); err != nil {
			return &Error{Field: "rate.domains[" + d + "]", Msg: "not a domain name such as gmail.com"}
		} else if a.Domain != d {
			return &Error{Field: "rate.domains[" + d + "]", Msg: fmt.Sprintf("write the domain in its ASCII form %q", a.Domain)}
		}
		if err := bucketError("rate.domains["+d+"]", b); err != nil {
			return err
		}
	}
	if p.Retention <= 0 {
		return &Error{Field: "retention", Msg: fmt.Sprintf("must be positive, got %s", p.Retention)}
	}
	if p.Concurrency < 1 || p.Concurrency > 1024 {
		return &Error{Field: "concurrency", Msg: fmt.Sprintf("must be between 1 and 1024, got %d", p.Concurrency)}
	}
	return nil
}

// validateKinds checks every kind: its name, anchor and own legal rules,
// and each of its windows against the legal rule that applies to it and
// the schedule's longest gap.
func (p *Policy) validateKinds(now time.Time, gap time.Duration) error {
	seen := map[string]bool{}
	for i, k := range p.Notices {
		f := fmt.Sprintf("notices[%d]", i)
		if err := notice.ValidateKind(k.Kind); err != nil {
			return &Error{Field: f + ".kind", Msg: err.Error()}
		}
		f = "notices[" + k.Kind + "]"
		if seen[k.Kind] {
			return &Error{Field: f, Msg: "kind listed twice"}
		}
		seen[k.Kind] = true
		if err := validateKindContent(f, k); err != nil {
			return err
		}
		if err := validateChannels(f, k.Channels); err != nil {
			return err
		}
		if err := p.validateConfirm(f, k); err != nil {
			return err
		}
		if err := p.checkDefault(f, k, "", now, gap); err != nil {
			return err
		}
		for _, j := range k.Overrides() {
			if j == "" {
				return &Error{Field: f + ".by_jurisdiction", Msg: "empty jurisdiction name"}
			}
			if err := p.checkWindow(f+".by_jurisdiction["+j+"]", k, j, k.ByJurisdiction[j], gap); err != nil {
				return err
			}
		}
		// Jurisdictions with a legal rule (the policy's or the kind's own)
		// but no override use the default window, which must then satisfy
		// their rule too.
		for _, j := range p.legalJurisdictions(k) {
			if _, ok := k.ByJurisdiction[j]; !ok {
				if err := p.checkDefault(f+" (default window used in "+j+")", k, j, now, gap); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkDefault checks k's default window in jurisdiction j ("" for
// none): its due rule (compiled on the first call), or its open_before.
func (p *Policy) checkDefault(field string, k Kind, j string, now time.Time, gap time.Duration) error {
	if k.Due == nil {
		return p.checkWindow(field, k, j, k.Default(), gap)
	}
	if k.OpenBefore != 0 {
		return &Error{Field: field, Msg: fmt.Sprintf("kind %s: due and open_before are exclusive: a kind opens either at a working-day deadline or a fixed lead before its anchor", k.Kind)}
	}
	if j == "" {
		if err := k.Due.compile(field+".due", k.Kind); err != nil {
			return err
		}
	}
	return p.checkDue(field, k, j, now, gap)
}

// checkWindow checks one window of k in jurisdiction j ("" for the
// default): open after close, inside the legal lead, and at least gap wide.
func (p *Policy) checkWindow(field string, k Kind, j string, w Window, gap time.Duration) error {
	kind := k.Kind
	where := "kind " + kind
	if j != "" {
		where += ", jurisdiction " + j
	}
	if w.CloseBefore < 0 {
		return &Error{Field: field, Msg: fmt.Sprintf("%s: close_before %s is negative", where, w.CloseBefore)}
	}
	if w.OpenBefore <= w.CloseBefore {
		return &Error{Field: field, Msg: fmt.Sprintf("%s: window closes before it opens (open_before %s must be greater than close_before %s)", where, w.OpenBefore, w.CloseBefore)}
	}
	if l, ok := p.LegalFor(k, j); ok {
		if w.CloseBefore < l.MinLead || w.OpenBefore > l.MaxLead {
			return &Error{Field: field, Msg: fmt.Sprintf("%s: window [%s, %s] before %s lies outside the legal lead [%s, %s]", where, w.CloseBefore, w.OpenBefore, anchorWord(k), l.MinLead, l.MaxLead)}
		}
	}
	if width := time.Duration(w.OpenBefore - w.CloseBefore); width < gap {
		return &Error{Field: field, Msg: fmt.Sprintf("%s: window is %s wide but schedule %q can leave %s between two passes; widen the window or run more often", where, FormatDuration(width), p.Schedule, FormatDuration(gap))}
	}
	return nil
}

// anchorWord names what a kind's window is measured from, in messages.
func anchorWord(k Kind) string {
	if a := k.AnchorColumn(); a != DefaultAnchor {
		return a
	}
	return "renewal"
}

// bucketError is b.Check's verdict on a bucket the file states, which must
// limit, as the Error naming its key under field.
func bucketError(field string, b pace.Bucket) error {
	var be *pace.BucketError
	if errors.As(b.Check(true), &be) {
		return &Error{Field: field + "." + be.Field, Msg: be.Msg}
	}
	return nil
}

// ParseSchedule parses a standard five-field cron expression, with an
// optional CRON_TZ= or TZ= prefix (UTC otherwise), or a descriptor such as
// @daily.
func ParseSchedule(expr string) (cron.Schedule, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("empty cron expression")
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid cron expression %q: %v", expr, err)
	}
	return s, nil
}

// MaxGap returns the longest interval between two consecutive firings of
// the cron expression over the year that starts at from. A year is long
// enough for both DST changes of the schedule's zone to show.
func MaxGap(expr string, from time.Time) (time.Duration, error) {
	s, err := ParseSchedule(expr)
	if err != nil {
		return 0, err
	}
	end := from.AddDate(1, 0, 0)
	prev := s.Next(from)
	if prev.IsZero() {
		return 0, fmt.Errorf("cron expression %q never fires", expr)
	}
	var gap time.Duration
	// A schedule that fires more than a million times a year has gaps far
	// shorter than any notice window; stop counting there.
	for i := 0; i < 1_000_000 && prev.Before(end); i++ {
		next := s.Next(prev)
		if next.IsZero() {
			return 0, fmt.Errorf("cron expression %q stops firing", expr)
		}
		if g := next.Sub(prev); g > gap {
			gap = g
		}
		prev = next
	}
	return gap, nil
}

// DefaultRetention is the retention of a policy that sets none.
const DefaultRetention = 400 * 24 * time.Hour

// PruneMargin is what MinRetention adds to the longest lead: a month, the
// width of one ledger partition, for source rows whose period_start lies
// before their renews_at.
const PruneMargin = 31 * 24 * time.Hour

// LongestLead is the longest open_before of any kind in any jurisdiction:
// how far ahead of a charge a notice may be claimed.
func (p *Policy) LongestLead() time.Duration {
	var lead Duration
	for _, k := range p.Notices {
		lead = max(lead, k.OpenBefore)
		if k.Due != nil {
			lead = max(lead, Duration(k.Due.MaxLead()))
		}
		for _, w := range k.ByJurisdiction {
			lead = max(lead, w.OpenBefore)
		}
	}
	return time.Duration(lead)
}

// LongestWindow is the widest window of any kind in any jurisdiction,
// from its opening to its close (a due rule's by its longest lead).
func (p *Policy) LongestWindow() time.Duration {
	var width time.Duration
	for _, k := range p.Notices {
		open := time.Duration(k.OpenBefore)
		if k.Due != nil {
			open = k.Due.MaxLead()
		}
		width = max(width, open-time.Duration(k.CloseBefore))
		for _, w := range k.ByJurisdiction {
			width = max(width, time.Duration(w.OpenBefore-w.CloseBefore))
		}
	}
	return width
}

// MinRetention is the shortest horizon `scan prune` accepts: the longest
// lead plus PruneMargin. A shorter one could remove the ledger row of a
// notice whose window is still open, and a pass would then send it again.
func (p *Policy) MinRetention() time.Duration { return p.LongestLead() + PruneMargin }

// CheckRetention refuses a horizon of `scan prune` shorter than
// MinRetention, saying why and what the shortest is.
func (p *Policy) CheckRetention(horizon time.Duration) error {
	if min := p.MinRetention(); horizon < min {
		return fmt.Errorf("%s is shorter than the longest notice window's lead (%s) plus a safety margin of %s: periods that young may still be claimed, and a pass would send their notices again; use at least %s",
			FormatDuration(horizon), FormatDuration(p.LongestLead()), FormatDuration(PruneMargin), FormatDuration(min))
	}
	return nil
}

// Kind returns the kind named k.
func (p *Policy) Kind(k string) (Kind, bool) {
	for _, n := range p.Notices {
		if n.Kind == k {
			return n, true
		}
	}
	return Kind{}, false
}

// KnownJurisdiction reports whether the policy names j anywhere (a legal
// rule or a window override of any kind).
func (p *Policy) KnownJurisdiction(j string) bool {
	if _, ok := p.Legal[j]; ok {
		return true
	}
	for _, k := range p.Notices {
		if _, ok := k.ByJurisdiction[j]; ok {
			return true
		}
		if _, ok := k.Legal[j]; ok {
			return true
		}
	}
	return false
}

// validateConfirm checks a kind's confirm_within: positive, on a kind
// that goes by email then sms, and with a provider whose events say
// whether a message was delivered (provider none correlates no event
// with its notice: nothing could ever confirm it).
func (p *Policy) validateConfirm(f string, k Kind) error {
	if k.ConfirmWithin == 0 {
		return nil
	}
	f += ".confirm_within"
	switch {
	case k.ConfirmWithin < 0:
		return &Error{Field: f, Msg: fmt.Sprintf("kind %s: %s: must be positive", k.Kind, k.ConfirmWithin)}
	case !slices.Equal(k.Channels, []string{notice.ChannelEmail, notice.ChannelSMS}):
		return &Error{Field: f, Msg: fmt.Sprintf("kind %s: takes channels [email, sms] (the sms goes when the email is not confirmed delivered), not %v", k.Kind, k.Channels)}
	case p.Provider == "" || p.Provider == string(provider.None):
		return &Error{Field: f, Msg: fmt.Sprintf("kind %s: provider none cannot report delivery: set provider (one of %s) so that its events confirm it", k.Kind, strings.Join(Providers[1:], ", "))}
	}
	return nil
}

// CheckConfirmSender refuses a kind's confirm_within when a sender
// cannot report delivery (outbox files, the http sender: no provider's
// event ever names their messages). sender is --sender's value: one
// sender, or an ordered list (ses,smtp).
func (p *Policy) CheckConfirmSender(sender string) error {
	blind := ""
	for _, s := range strings.Split(sender, ",") {
		if s = strings.TrimSpace(s); s == "outbox" || s == "http" {
			blind = s
		}
	}
	if blind == "" {
		return nil
	}
	sender = blind
	for _, k := range p.Notices {
		if k.ConfirmWithin != 0 {
			return &Error{Field: "notices[" + k.Kind + "].confirm_within",
				Msg: fmt.Sprintf("kind %s: the %s sender cannot report delivery: confirm_within needs a provider's sender (ses, or smtp with provider set)", k.Kind, sender)}
		}
	}
	return nil
}

// validateChannels checks a kind's channels: [email] (the default, also
// when empty), [email, sms], [sms] or [sms, email].
func validateChannels(f string, chs []string) error {
	switch {
	case len(chs) == 0, slices.Equal(chs, []string{notice.ChannelEmail}), slices.Equal(chs, []string{notice.ChannelEmail, notice.ChannelSMS}),
		slices.Equal(chs, []string{notice.ChannelSMS}), slices.Equal(chs, []string{notice.ChannelSMS, notice.ChannelEmail}):
		return nil
	}
	for _, c := range chs {
		if !notice.ValidChannel(c) {
			return &Error{Field: f + ".channels", Msg: fmt.Sprintf("%q is not a channel: use email or sms", c)}
		}
	}
	return &Error{Field: f + ".channels", Msg: fmt.Sprintf("%v: this version takes [email], [email, sms] (sms when email cannot reach the customer), [sms] or [sms, email] (email when sms cannot)", chs)}
}
