// Package job assembles the passes of `scan run` and `scan schedule`
// from settings that cmd/scan has read and checked: at each pass's now,
// a fresh run ID, the email sender, the source relation (probed anew, so
// that a scheduler's next pass sees it as it is then), the observer that
// records the pass for `scan status` and pushes its metrics, and the
// scan.Pass over them. Config.Complete checks the settings against each
// other first, and builds the renderer and the sms sender they imply.
// Renderer builds what every pass (and `scan preview`) renders with;
// WarnAsyncStandbys is the advice a job logs when it starts.
package job

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/clock"
	"scan/internal/failpoint"
	"scan/internal/ledger"
	"scan/internal/message"
	"scan/internal/observe"
	"scan/internal/policy"
	"scan/internal/provider/twilio"
	"scan/internal/scan"
	"scan/internal/send"
	"scan/internal/senders"
	"scan/internal/subscription"
)

// Config is what every pass of a job shares. Each field is already
// validated; the zero value of an optional one means what scan.Config's
// does.
type Config struct {
	Policy          *policy.Policy
	Secret          []byte
	PreviousSecrets [][]byte // NOTICE_KEY_SECRET_PREVIOUS
	Renderer        *message.Renderer
	Shard, Shards   int
	BatchSize       int
	MaxMint         *int // nil: no limit
	MaxDuration     time.Duration
	Relation        string       // the source relation (--source)
	Redirect        string       // every notice to this address (staging)
	Schedule        string       // the cron passes run on, when not the policy's (scan schedule --cron)
	Senders         *senders.Set // the email senders, in failover order
	SMS             *twilio.Client
	SMSClock        *clock.Shifted // the sms sender's, moved to each pass's now
	Log             zerolog.Logger
	// What the observer needs (observe.Config): the Pushgateway ("" for
	// none), where a progress bar goes, the clock, and how a failure is
	// recorded in notice_pass.
	PushURL  string
	Stderr   io.Writer
	Clock    func() time.Time
	Describe func(error) string
}

// Pass builds one pass at now on db, with its sender and its observer.
// The pass's hooks are the observer's, after the fail points of a
// crash-test build. closeSender must be called once the pass is over.
func (c *Config) Pass(ctx context.Context, db *sqlx.DB, now time.Time) (sc *scan.Pass, obs *observe.Observer, closeSender func() error, err error) {
	sender, err := c.Senders.New()
	if err != nil {
		return nil, nil, nil, err
	}
	c.SMSClock.StartAt(now)
	runID := NewRunID(now)
	passLog := c.Log.With().Int("shard", c.Shard).Logger()
	obs = observe.New(observe.Config{Log: passLog, RunID: runID, Domains: slices.Collect(maps.Keys(c.Policy.Rate.Domains)),
		Shard: c.Shard, Shards: c.Shards, PushURL: c.PushURL, Stderr: c.Stderr, Clock: c.Clock, DB: db, Describe: c.Describe})
	src, err := OpenSource(ctx, db, c.Policy, c.Relation, c.Shard, c.Shards)
	if err != nil {
		sender.Close()
		return nil, nil, nil, err
	}
	sc, err = scan.New(db, sender, c.Renderer, passLog, scan.Config{
		Policy: c.Policy, Secret: c.Secret, PreviousSecrets: c.PreviousSecrets, Source: src, RunID: runID, Now: now,
		MaxMint: c.MaxMint, Shard: c.Shard, Shards: c.Shards, BatchSize: c.BatchSize, RedirectTo: c.Redirect,
		MaxDuration: c.MaxDuration, Hooks: obs.Hooks(failpoint.Hooks()), Schedule: c.Schedule,
		SMS: smsSender(c.SMS), SenderName: c.Senders.Names()[0],
	})
	if err != nil {
		sender.Close()
		return nil, nil, nil, err
	}
	return sc, obs, sender.Close, nil
}

// smsSender is c as the pass's sender, nil (no sms stage) for none.
func smsSender(c *twilio.Client) send.Sender {
	if c == nil {
		return nil
	}
	return c
}

// OpenSource is a pass's start-up I/O, before scan.New validates
// without any: the ledger must be migrated (ledger.Probe), and the source
// relation is probed once for its columns and the policy's anchors
// (subscription.Open).
func OpenSource(ctx context.Context, db *sqlx.DB, pol *policy.Policy, relation string, shard, shards int) (*subscription.Source, error) {
	if err := ledger.Probe(ctx, db); err != nil {
		if errors.Is(err, ledger.ErrNotMigrated) {
			return nil, &scan.ConfigError{Field: "database", Msg: err.Error()}
		}
		return nil, err
	}
	return subscription.Open(ctx, db, relation, subscription.Shard{I: shard, N: shards}, subscription.Anchors(pol))
}

// NewRunID names a run (a pass, a backfill, a recovery): its start
// instant, and 32 random bits.
func NewRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// WarnAsyncStandbys warns, once when a pass or a schedule starts, when the
// ledger's server is a primary whose standbys are all asynchronous: a
// failover to one of them loses the claims it had not received, and the
// next pass then refuses (exit 4) until `scan recover`. A server that does
// not let this role read it (or any error) says nothing: the warning is
// advice, never a reason to stop. It also warns when the role may not
// read which standby is synchronous: a switchover would then refuse.
func WarnAsyncStandbys(ctx context.Context, log zerolog.Logger, db *sqlx.DB) {
	r, err := ledger.ReplicationOf(ctx, db)
	if err == nil && r.SyncHidden() {
		log.Warn().Int("standbys", r.Standbys).
			Msg("this role may not read pg_stat_replication's sync_state: a switchover to the synchronous standby " +
				"will refuse like a lossy failover (exit 4); grant pg_monitor (docs/recovery-ha.md)")
	}
	if err != nil || !r.AllAsync() {
		return
	}
	log.Warn().Int("standbys", r.Standbys).Str("synchronous_standby_names", r.SyncNames).
		Msg("the ledger's server streams only to asynchronous standbys: a failover to one of them can lose the last claims " +
			"(the next pass then refuses with exit 4 until `scan recover`); make a standby synchronous " +
			"(synchronous_standby_names, synchronous_commit on or remote_apply) to lose nothing")
}
