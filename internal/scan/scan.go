// Package scan runs one pass of the notice job: it captures now once,
// selects the subscriptions whose notice window is open, claims their keys
// in the ledger (committing each batch's claim before anything of that
// batch leaves the process), sends only what this pass newly claimed
// through the per-domain buckets of package send, and records each
// outcome. Notices whose window closed with no claim are recorded missed.
//
// A Pass is one pass: built with New, run once with Run (or DryRun), and
// not safe for concurrent use. Concurrent passes (several processes, or
// several Pass values) are safe with each other because the ledger's
// unique indexes decide every claim.
package scan

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/address"
	"scan/internal/clock"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/send"
	"scan/internal/subscription"
	"scan/internal/suppress"
	"scan/internal/usage"
)

// Errors a pass returns; the command maps them to exit codes.
var (
	// ErrMaxMint: the pass would mint more keys than --max-mint allows.
	// Nothing was claimed or sent.
	ErrMaxMint = errors.New("refused by --max-mint")
)

// ConfigError is a problem with the pass's configuration or its source
// relation, found before anything was written. Field names the setting.
type ConfigError = usage.Error

// Hooks are called at the pass's boundaries. They exist for tests (fail
// points that crash the process there) and for metrics; nil hooks are
// skipped. They run on the pass's goroutines and must be quick.
type Hooks struct {
	// BeforeClaim runs just before a batch of n new claims is sent to the
	// ledger, before anything of that batch is written.
	BeforeClaim func(n int)
	// AfterClaimCommit runs after a batch's claim committed and before any
	// notice of it is handed to a sender.
	AfterClaimCommit func(n int)
	// AfterAccepted runs when a provider accepted a notice, before the
	// outcome is written.
	AfterAccepted func(key string)
	// AfterOutcomeCommit runs after a batch of outcomes committed.
	AfterOutcomeCommit func(n int)
	// Outcome runs for every outcome recorded, with the claim-to-commit
	// latency, the claim-to-send latency (from the claim's commit until
	// the notice was first handed to the sender; negative when it never
	// was) and the time the notice waited on rate limits.
	Outcome func(state ledger.State, domain string, claimToCommit, claimToSend, waited time.Duration)
}

// Config configures one pass. Zero values take the documented defaults.
type Config struct {
	Policy *policy.Policy // required
	Secret []byte         // NOTICE_KEY_SECRET, at least 32 bytes; required
	// PreviousSecrets are NOTICE_KEY_SECRET_PREVIOUS's, at least 32 bytes
	// each: the suppression probe matches an address under each of them
	// too, and re-records a match under Secret (issue 38).
	PreviousSecrets [][]byte
	// Source is the relation the pass reads, opened (and probed) at
	// start-up by subscription.Open for this Shard/Shards and the
	// policy's Anchors (subscription.Anchors); required.
	Source     *subscription.Source
	RunID      string    // required; recorded on every row this pass writes
	Now        time.Time // the pass's instant; required
	MaxMint    *int      // refuse (ErrMaxMint, nothing claimed) when more than *MaxMint would be minted, 0 refusing any; nil (the zero Config) means no limit
	Shard      int       // this pass's shard, 0 <= Shard < Shards
	Shards     int       // number of shards; default 1
	BatchSize  int       // rows per claim statement; default 1000
	RedirectTo string    // deliver every notice here instead (staging); recorded in the ledger
	// MaxDuration is the pass's time budget, from the start of Run; zero
	// means none. When it ends, the pass claims nothing more, lets what it
	// claimed be sent and recorded, and completes without error; the
	// notices it did not reach are counted in Summary.Deferred.
	MaxDuration time.Duration
	Retry       send.RetryPolicy
	// Clock measures durations (claim-to-commit latency, pass duration,
	// the time budget) and is the dispatcher's clock, so its buckets,
	// backoffs and the send times it reports follow it too; default
	// clock.System. It never decides windows: Now does. Tests pass a
	// fake (internal/send/sendtest).
	Clock clock.Clock
	Hooks Hooks
	// SMS is the sms channel's sender (package twilio's Client), used
	// by kinds with channels [email, sms]; nil: no sms stage (issue 30).
	SMS send.Sender
	// SenderName names the email sender in the ledger's sender column
	// ("ses", "smtp", "http", "outbox") when it is a single sender; a
	// *send.Failover names the sender of each attempt itself.
	SenderName string

	// Schedule is the cron expression passes run on: a notice due inside
	// the quiet hours is deferred only when it fires outside them before
	// the window closes. Default the policy's schedule (`scan schedule
	// --cron` passes its own).
	Schedule string

	// ShutdownGrace is how long after the cancellation of Run's context
	// (SIGTERM) outcomes are still written: the sends in flight finish and
	// are recorded within it, however slow the database; default
	// DefaultShutdownGrace. Outcomes not recorded by then stay in quarantine.
	ShutdownGrace time.Duration
}

// Summary is the JSON line a completed pass prints.
type Summary struct {
	RunID      string `json:"run_id"`
	Eligible   int    `json:"eligible"`
	Invalid    int    `json:"invalid"`
	Minted     int    `json:"minted"`
	Retried    int    `json:"retried"`
	Suppressed int    `json:"suppressed"`
	Sent       int    `json:"sent"`
	Retry      int    `json:"retry"`
	Failed     int    `json:"failed"`
	Ambiguous  int    `json:"ambiguous"`
	Missed     int    `json:"missed"`
	// Cancelled counts the retry rows this pass ended as cancelled: their
	// subscription was no longer active (issue 27).
	Cancelled int `json:"cancelled"`
	// SuppressedAddress counts the due notices not sent by their channel
	// because the recipient is on the suppression list (recorded failed
	// with reason suppressed_address; the kind's next channel takes them).
	SuppressedAddress int `json:"suppressed_address"`
	// NoUsableAddress counts the notices recorded failed because the row
	// had no address the channel can use (no or malformed email, no or
	// non-E.164 phone) while the kind has a next channel.
	NoUsableAddress int `json:"no_usable_address"`
	// InvalidAddress counts the email notices this pass recorded as retry
	// rows with reason invalid_address: a malformed address and no other
	// channel (a kind without sms). Not claimed, so in neither Minted nor
	// Retry: minted + retried == sent + retry + failed + ambiguous holds.
	// Each is also counted in Invalid.
	InvalidAddress int `json:"invalid_address"`
	// SMS counts the sms notices this pass claimed (part of Minted and
	// Retried; their outcomes are in Sent, Retry, Failed, Ambiguous).
	SMS int `json:"sms"`
	// Witnessed counts the due notices this pass found with no ledger row
	// but with the provider's evidence that they went out (kept by
	// reconcile, receive or recover before the ledger had them: after a
	// restore or a failover lost their claims). Each is recorded sent (or
	// failed, for a hard bounce) from that evidence and is not sent; it is
	// not in Minted, so minted + retried == sent + retry + failed +
	// ambiguous still holds, and eligible counts it.
	Witnessed int `json:"witnessed"`
	// Deferred counts the due notices this pass neither claimed nor found
	// claimed because its time budget ended first, or because the quiet
	// hours held them; a later pass takes them while their window is open.
	Deferred   int   `json:"deferred"`
	DurationMS int64 `json:"duration_ms"`
	// DeferredQuietHours is the part of Deferred that the quiet hours held
	// (reason quiet_hours): a later pass outside them sends them.
	DeferredQuietHours int `json:"deferred_quiet_hours"`
	// Fallback counts the notices this pass claimed with the policy's
	// default_locale or default_time_zone in place of the row's malformed
	// or unknown locale or time_zone (each logged by subscription id).
	Fallback int `json:"fallback"`
	// Failover counts the notices this pass sent through a later sender
	// of SCAN_SENDER's list than its first (send.Failover, issue 36): the
	// first proved it could not send. Part of Sent; 0 with one sender.
	Failover int `json:"failover"`
	// DeferredByDomain splits Deferred by recipient domain (for the
	// backlog metric; never printed: the summary carries no domain).
	DeferredByDomain map[string]int `json:"-"`
	// Quarantine is the number of claims that still have no recorded
	// outcome at the end of the pass (this pass's ambiguous ones and any
	// earlier run's); QuarantineSince the oldest claim among them.
	Quarantine int `json:"quarantine"`
	// InvalidAddressWaiting is the number of notices (any run) waiting in
	// retry with reason invalid_address and their window still open at the
	// end of the pass: a malformed address and no other channel, for
	// support to fix (scan undelivered lists them).
	InvalidAddressWaiting int        `json:"invalid_address_waiting"`
	QuarantineSince       *time.Time `json:"quarantine_since,omitempty"`
	// RetryOldest is when the oldest row still in state retry was first
	// claimed (nil: none); WindowLength the policy's longest window, from
	// opening to close: a retry older than that outlived every window
	// (metrics, issue 27).
	RetryOldest  *time.Time    `json:"-"`
	WindowLength time.Duration `json:"-"`
	// Objective is the delivery objective per trailing period, counted
	// from the ledger at the pass's end (nil: not counted); EmailConfirms
	// whether the email sender reports delivery (metrics, issue 36 §6).
	Objective     []ledger.ObjectiveCount `json:"-"`
	EmailConfirms bool                    `json:"-"`
	// Attempts is the sum of the attempt numbers of the claims this pass
	// won (1 for a first claim, n for the n-th): over Minted+Retried, the
	// attempts per unique key (metrics, issue 27).
	Attempts int `json:"-"`
	// KeyMismatch is set when NOTICE_KEY_SECRET no longer derives the keys
	// in the ledger (a changed or rotated secret).
	KeyMismatch bool `json:"key_mismatch,omitempty"`
}

// DryRunSummary is what --dry-run prints: what a pass would do now.
type DryRunSummary struct {
	Eligible       int `json:"eligible"`
	Invalid        int `json:"invalid"`
	WouldMint      int `json:"would_mint"`
	AlreadyClaimed int `json:"already_claimed"`
	WouldMiss      int `json:"would_miss"`
	// WouldDefer: due notices the quiet hours would hold for a later pass.
	WouldDefer int `json:"would_defer"`
	// WouldSMS: sms notices the pass's sms stage would send (new, and sms
	// rows in retry), from what the ledger and the source say now;
	// WouldSMSUnreached: those it would record failed for want of a
	// usable phone number. Neither is in Eligible or WouldMint.
	WouldSMS          int `json:"would_sms"`
	WouldSMSUnreached int `json:"would_sms_no_usable_address"`
	smsMint           int // the new sms notices of WouldSMS: --max-mint counts them
	// WouldEmailAfterSMS: the email notices of the kinds with channels
	// [sms, email] the pass would mail now, their sms notice failed (or
	// failing in this pass for want of a number or by the suppression
	// list). Not in Eligible or WouldMint; --max-mint counts them.
	WouldEmailAfterSMS int `json:"would_email_after_sms"`
	// WouldRefuse: why a pass now would refuse to claim (the ledger's
	// database restored or failed over since the last pass, exit 4); the
	// counts are then not taken.
	WouldRefuse string `json:"would_refuse,omitempty"`
}

// Renderer is what the pass renders with: an email notice's message
// (notice.Renderer, which the email stage's Dispatcher calls) and an sms
// notice's body (notice.TextRenderer). internal/message's Renderer is one.
type Renderer interface {
	notice.Renderer
	notice.TextRenderer
}

// selection is one window group of one kind as the pass reads it
// (subscription.Window): package subscription reads the source relation
// and turns a window at the pass's now into the bounds of its reads; no
// SQL statement lives in this package.
type selection = subscription.Window

// Pass is one pass of the job against one database, at one instant
// (Config.Now). Build it with New and Run it once.
type Pass struct {
	db       *sqlx.DB
	sender   send.Sender
	renderer Renderer
	log      zerolog.Logger
	cfg      Config
	keyer    *notice.Keyer
	// keys are the suppression list's hashers, under Config.Secret and
	// Config.PreviousSecrets; probePrevious: the email probe uses the
	// previous ones in this pass (checkPreviousKeys).
	keys          suppress.Keys
	probePrevious bool
	// suppressionEmail: the email suppression list had entries when the
	// pass started (Run); without, batches are not probed.
	suppressionEmail bool
	// summary: the suppression list's summary, read at the pass's start
	// (loadSummary); each claim batch refreshes it.
	summary *ledger.SuppressionSummary
	src     subscription.At
	// sels are each channel's stage's selections, per kind its default
	// group then its overrides, by the channel a kind goes by first.
	sels        map[string][][]selection
	kinds       map[string]policy.Kind
	content     *content
	sawQuiet    bool         // a row the quiet hours deferred was read (tallyDeferred)
	pageCands   []candidate  // readInto's buffer of a page's candidates, reused page after page
	start       time.Time    // when Run started (the time budget's origin)
	maxMint     int          // *cfg.MaxMint, or -1 for no limit
	sweepc      *sweepTools  // this run's sms stage's own resolvers (startSweeps)
	sweptMinted atomic.Int64 // this run's new sms notices, out of Minted
	// sweptC is closed (sweptDone, once) when this run's sms stage's first
	// sweep has ended, or at once without one: the afterSMS streams then
	// read again (handback.go). nil (never ready) outside Run.
	sweptC    <-chan struct{}
	sweptDone func()
}

// New validates cfg and returns a Pass; it does no I/O (the ledger's and
// the source's probes are the caller's, at start-up: ledger.Probe and
// subscription.Open). A *ConfigError means nothing can run and nothing
// was written.
func New(db *sqlx.DB, sender send.Sender, renderer Renderer, log zerolog.Logger, cfg Config) (*Pass, error) {
	if cfg.Policy == nil {
		return nil, &ConfigError{Field: "policy", Msg: "required"}
	}
	keyer, err := notice.NewKeyer(cfg.Secret)
	if err != nil {
		return nil, &ConfigError{Field: "NOTICE_KEY_SECRET", Msg: err.Error()}
	}
	if cfg.RunID == "" {
		return nil, &ConfigError{Field: "run_id", Msg: "required"}
	}
	if cfg.Now.IsZero() {
		return nil, &ConfigError{Field: "now", Msg: "required"}
	}
	if err := fillDefaults(&cfg); err != nil {
		return nil, err
	}
	keys, err := suppress.NewKeys(cfg.Secret, cfg.PreviousSecrets) // the secret's length is checked above
	if err != nil {
		return nil, &ConfigError{Field: "NOTICE_KEY_SECRET_PREVIOUS", Msg: err.Error()}
	}
	s := &Pass{db: db, sender: sender, renderer: renderer, log: log.With().Str("run_id", cfg.RunID).Logger(), cfg: cfg, keyer: keyer, keys: keys, maxMint: -1}
	if cfg.MaxMint != nil {
		if *cfg.MaxMint < 0 {
			return nil, &ConfigError{Field: "max-mint", Msg: fmt.Sprintf("must be 0 or more, got %d (leave it unset for no limit)", *cfg.MaxMint)}
		}
		s.maxMint = *cfg.MaxMint
	}
	if err := checkSource(cfg); err != nil {
		return nil, err
	}
	s.src = subscription.At{Source: cfg.Source, Now: cfg.Now, Limit: cfg.BatchSize}
	if s.content, err = newPassContent(cfg); err != nil {
		return nil, err
	}
	s.selectGroups()
	return s, nil
}

// fillDefaults fills cfg's defaults and checks its shard, time budget
// and staging redirect.
func fillDefaults(cfg *Config) error {
	if cfg.Shards == 0 {
		cfg.Shards = 1
	}
	if cfg.Shards < 1 || cfg.Shard < 0 || cfg.Shard >= cfg.Shards {
		return &ConfigError{Field: "shard", Msg: fmt.Sprintf("%d/%d is not a shard: need 0 <= I < N", cfg.Shard, cfg.Shards)}
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.MaxDuration < 0 {
		return &ConfigError{Field: "max_duration", Msg: fmt.Sprintf("%v is negative", cfg.MaxDuration)}
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.RedirectTo != "" {
		if _, err := address.Parse(cfg.RedirectTo); err != nil {
			return &ConfigError{Field: "SCAN_REDIRECT_TO", Msg: "not a valid address"}
		}
	}
	return nil
}

// checkSource refuses a source opened for another shard, or without the
// anchor of one of the policy's kinds.
func checkSource(cfg Config) error {
	if cfg.Source == nil {
		return &ConfigError{Field: "source", Msg: "required (subscription.Open)"}
	}
	if sh := cfg.Source.Shard(); sh != (subscription.Shard{I: cfg.Shard, N: cfg.Shards}) {
		return &ConfigError{Field: "shard", Msg: fmt.Sprintf("the source was opened for shard %d/%d, the pass is %d/%d", sh.I, sh.N, cfg.Shard, cfg.Shards)}
	}
	for _, a := range subscription.Anchors(cfg.Policy) {
		if !cfg.Source.Reads(a.Column) {
			return &ConfigError{Field: "notices[" + a.Kind + "].anchor", Msg: fmt.Sprintf("the source was not opened for the anchor %q (subscription.Open with subscription.Anchors)", a.Column)}
		}
	}
	return nil
}

// selectGroups builds the pass's window groups: per kind, its default
// window and each jurisdiction's override.
func (p *Pass) selectGroups() {
	cfg := p.cfg
	p.kinds, p.sels = map[string]policy.Kind{}, map[string][][]selection{}
	for _, k := range cfg.Policy.Notices {
		p.kinds[k.Kind] = k
		group := subscription.Windows(k, cfg.Now, len(p.sels[notice.ChannelEmail]) == 0 && !k.SMSFirst())
		first := notice.ChannelEmail
		if k.SMSFirst() {
			first = notice.ChannelSMS // the sms stage's alone
		}
		p.sels[first] = append(p.sels[first], group)
	}
}

// newPassContent builds the pass's content resolver, with the schedule
// the quiet hours count on.
func newPassContent(cfg Config) (*content, error) {
	expr := cfg.Schedule
	if expr == "" {
		expr = cfg.Policy.Schedule
	}
	sched, err := policy.ParseSchedule(expr)
	if err != nil {
		return nil, &ConfigError{Field: "schedule", Msg: err.Error()}
	}
	return newContent(cfg.Policy, cfg.Now, sched)
}

// due is one valid due notice, ready to claim.
type due struct {
	claim ledger.Claim
	n     notice.Notice
	// fallbacks are the defaults that replaced the row's locale or
	// time_zone ("locale", "time_zone"); counted once the notice is
	// claimed.
	fallbacks []string
	// addr is the recipient's address normalized for the suppression
	// list ("" under a staging redirect: what is sent there says nothing
	// of the customer's address); derive digests it.
	addr string
}

// derive fills in the claim of a valid due notice with what it takes from
// the secret: its key (unless the ledger row gave it), Message-ID and
// cancellation token. It is the costly half of validation (two HMACs), so
// a row the pass skips for now is never derived. The key and token are
// the claim's alone: the notice takes them when it leaves (due.notice).
func (p *Pass) derive(dn *due) {
	derived := dn.claim.Key == ""
	if derived {
		dn.claim.Key = p.keyer.Key(dn.claim.Tuple)
	}
	dn.claim.MessageID = notice.MessageID(dn.claim.Key, p.cfg.Policy.MessageIDDomain)
	if derived && dn.claim.Revision == 0 {
		// The key just derived is the first revision's: the token's
		// material (a key from the ledger may be under an older secret).
		dn.claim.CancelToken = p.keyer.CancelTokenOf(dn.claim.Key)
	} else {
		dn.claim.CancelToken = p.keyer.CancelToken(dn.claim.Tuple)
	}
	if dn.addr != "" {
		// Under the previous secrets only while a rotation is probed
		// (checkPreviousKeys): with none, nothing more is probed.
		dn.claim.AddressHMAC, dn.claim.PreviousHMACs = p.keys.Digests(notice.ChannelEmail, dn.addr, p.probePrevious)
	}
}

// notice is dn's notice as it leaves for the renderer, with the claim's
// key and cancellation token (derive's). A re-claim's stored token
// replaces the latter (submit).
func (dn *due) notice() notice.Notice {
	n := dn.n
	n.Key = dn.claim.Key
	if dn.claim.CancelToken != "" { // an sms claim keeps none: its notice has it
		n.CancelToken = dn.claim.CancelToken
	}
	return n
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// counters are the pass's tallies; the recorder goroutine updates the
// outcome half, so they are guarded.
type counters struct {
	mu sync.Mutex
	Summary
}

func (c *counters) add(f func(s *Summary)) {
	c.mu.Lock()
	f(&c.Summary)
	c.mu.Unlock()
}

func (c *counters) snapshot() Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Summary
}

// invalidLog logs (and lets the caller count) each invalid subscription
// once per pass, whatever the number of kinds: the first reason found
// is logged (a jurisdiction's requires may differ by kind, but a row
// counts once).
type invalidLog struct {
	seen map[string]bool
	log  zerolog.Logger
}

func (l *invalidLog) note(id, kind, reason string) bool {
	if l.seen[id] {
		return false
	}
	l.seen[id] = true
	l.log.Warn().Str("subscription_id", subscription.LogID(id)).Str("kind", kind).Str("reason", reason).Msg("invalid subscription row skipped; nothing claimed")
	return true
}
