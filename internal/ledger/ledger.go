// Package ledger owns the notice ledger: its migrations and every SQL
// statement that reads or writes it (queries.go, each a named constant).
// The ledger is the only component allowed to answer "did this notice
// already go out?": a notice is claimed by inserting its row under a
// unique index before anything leaves the process, and its outcome is
// recorded after the send.
//
// What it holds, by file:
//
//   - ledger.go: the states, a row (Row), migrations (Migrate, Probe) and
//     transactions (WithTx);
//   - claim.go: a pass's claims (Insert, Reclaim) and its retry rows
//     (Retries, ExpireRetries); outcome.go: its outcomes (RecordOutcomes);
//   - settle.go: provider events applied to their attempt (Settle), and
//     evidence.go: the events kept (EvidenceOf), those of unknown notices
//     too (the second witness, which the claim statement consults);
//   - epoch.go: where each pass found the database (CheckPass: a new
//     timeline after a failover or a restore refuses the pass,
//     ErrRestored) and the acknowledgements that lift it (Acknowledge);
//     recover.go: the provider's record applied after such a restore
//     (Recover);
//   - resolve.go: an operator's decisions (NewDecision, Resolve,
//     ResolveKey, ResolveRun);
//   - backfill.go: notices an earlier system sent (Backfill);
//   - lookup.go: what operators and a pass's checks read (Get,
//     BySubscription, Quarantine, Recent ...);
//   - partition.go and prune.go: the monthly partitions and their removal
//     (Partitions, Prune);
//   - errors.go: every sentinel error.
//
// Functions take an sqlx.ExtContext (or QueryerContext, to read) so that
// callers own the transaction; the ones that must run inside one
// (Resolve, Settle, Backfill) take a *sqlx.Tx, and WithTx runs a function
// in one; those that open transactions of their own (RecordOutcomes,
// Prune, ResolveKey, ResolveRun) take the *sqlx.DB. Times are always passed in (the caller reads its clock once per
// pass); no statement calls now(). The ledger never imports package send.
package ledger

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	schema "scan/sql"
)

// State is the state of a ledger row.
type State string

// The states of a notice, as docs/operations.md's Commands section lists them.
const (
	Claimed State = "claimed" // claimed, outcome not recorded: in flight or quarantined
	Sent    State = "sent"    // the provider accepted it; final
	Retry   State = "retry"   // the provider definitely did not accept it
	Failed  State = "failed"  // permanently rejected
	Missed  State = "missed"  // the window closed before any pass claimed it; final
	// Cancelled: a retry row whose subscription was no longer active when
	// a pass came to re-claim it; nothing more is sent; final (reason
	// "cancelled").
	Cancelled State = "cancelled"
)

// Valid reports whether s is one of the six states.
func (s State) Valid() bool {
	switch s {
	case Claimed, Sent, Retry, Failed, Missed, Cancelled:
		return true
	}
	return false
}

// How instants and dates travel to PostgreSQL inside text[] parameters
// (arrays go through lib/pq as text and are cast on the server).
const (
	tsLayout   = time.RFC3339Nano // an instant, always in UTC
	dateLayout = "2006-01-02"     // a billing period's date
)

// MigrationTable is the table in which goose records applied migrations.
const MigrationTable = "scan_migrations"

// MigrationLockTable is the table of goose's lock lease (created by goose
// on first use).
const MigrationLockTable = "scan_migrations_lock"

// Migrate applies the embedded migrations in sql/. It holds a lock while
// it works, so several processes (an init container per pod) may run it
// at once; it is idempotent. The lock is goose's lease row
// (MigrationLockTable: a holder id and an expiry renewed every 5s, 30s
// lease), not a session-level advisory lock, so that it holds behind
// PgBouncer in transaction pooling (docs/fleet.md), and a crashed holder's
// lease runs out by itself.
func Migrate(ctx context.Context, db *sql.DB) (applied int, err error) {
	locker, err := lock.NewPostgresTableLocker(lock.WithTableName(MigrationLockTable))
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, schema.Migrations,
		goose.WithLocker(locker),
		goose.WithTableName(MigrationTable),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	return len(res), nil
}

// WithTx runs fn in a transaction and commits it when fn returns nil. A
// failed fn or a failed commit rolls back (rollback), cancelled or not, so
// a cancelled pass still ends its transaction.
func WithTx(ctx context.Context, db *sqlx.DB, fn func(tx *sqlx.Tx) error) (err error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = rollback(tx)
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// rollback ends tx without committing. It takes no context on purpose: a
// rollback must run even once the caller's context is cancelled, and
// database/sql's Rollback takes none (when the context tx began with is
// cancelled, database/sql has already rolled it back, and Rollback's
// sql.ErrTxDone is then no error).
func rollback(tx *sqlx.Tx) error {
	err := tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// Row is one ledger row as operators see it.
type Row struct {
	NoticeKey      string     `db:"notice_key" json:"notice_key"`
	SubscriptionID string     `db:"subscription_id" json:"subscription_id"`
	Kind           string     `db:"kind" json:"kind"`
	PeriodStart    time.Time  `db:"period_start" json:"-"`
	Revision       int        `db:"revision" json:"revision"`
	State          State      `db:"state" json:"state"`
	ClaimedAt      time.Time  `db:"claimed_at" json:"claimed_at"`
	SentAt         *time.Time `db:"sent_at" json:"sent_at,omitempty"`
	MessageID      *string    `db:"message_id" json:"message_id,omitempty"`
	ProviderID     *string    `db:"provider_id" json:"provider_id,omitempty"`
	Attempts       int        `db:"attempts" json:"attempts"`
	LastError      *string    `db:"last_error" json:"last_error,omitempty"`
	RunID          string     `db:"run_id" json:"run_id"`
	RenewsAt       *time.Time `db:"renews_at" json:"renews_at,omitempty"`
	WindowClosesAt *time.Time `db:"window_closes_at" json:"window_closes_at,omitempty"`
	Domain         *string    `db:"domain" json:"domain,omitempty"`
	RedirectedTo   *string    `db:"redirected_to" json:"redirected_to,omitempty"`
	CancelToken    *string    `db:"cancel_token" json:"-"`
	Supersedes     *string    `db:"supersedes" json:"supersedes,omitempty"`
	UpdatedAt      *time.Time `db:"updated_at" json:"updated_at,omitempty"`
	// MessageSHA256 is the SHA-256 of the message the current attempt
	// handed to the provider (Digest gives it in hex); nil when none was.
	MessageSHA256 []byte `db:"message_sha256" json:"-"`
	// SettledBy says who settled the current attempt when it was not the
	// pass's own outcome: SettledByOperator, or the EventKind of the
	// provider event that did.
	SettledBy *string `db:"settled_by" json:"settled_by,omitempty"`
	// Rule is the window rule the notice's deadline used and TimeZone the
	// zone it was evaluated in; nil for rows older than issue 27.
	Rule     *string `db:"rule" json:"rule"`
	TimeZone *string `db:"time_zone" json:"time_zone"`
	// FirstClaimedAt is when the first attempt was claimed (ClaimedAt is
	// the latest attempt's).
	FirstClaimedAt *time.Time `db:"first_claimed_at" json:"first_claimed_at,omitempty"`
	// Reason says why the row ended as it did when State alone does not
	// ("cancelled").
	Reason *string `db:"reason" json:"reason,omitempty"`
	// Channel is the notice's channel: email or sms (issue 30).
	Channel string `db:"channel" json:"channel"`
	// AddressHMAC is the recipient's suppression digest
	// (notice.AddressHasher), written with the claim; nil for rows claimed
	// before it was kept. Never printed.
	AddressHMAC []byte `db:"address_hmac" json:"-"`
	// DeliveryKind is the kind of the evidence that decided the delivery
	// of attempt DeliveryAttempt ('' for none: sql/0030); Delivery is the
	// notice's delivery derived from it (DeliveryOf), filled by the
	// look-ups (BySubscription, Get).
	DeliveryKind    string   `db:"delivery_kind" json:"delivery_kind,omitempty"`
	DeliveryAttempt int      `db:"delivery_attempt" json:"-"`
	Delivery        Delivery `db:"-" json:"delivery"`
	// Sender names the sender the current attempt went through (ses,
	// smtp, http, outbox, twilio; issue 36's failover); nil before an
	// outcome is recorded and for rows older than migration 0032.
	Sender *string `db:"sender" json:"sender,omitempty"`
}

// Digest returns MessageSHA256 in lower-case hex, "" when there is none.
func (r Row) Digest() string { return hex.EncodeToString(r.MessageSHA256) }

// Period returns the billing period as YYYY-MM-DD.
func (r Row) Period() string { return r.PeriodStart.Format(dateLayout) }

// Probe checks that the ledger exists, without touching a row.
func Probe(ctx context.Context, db sqlx.QueryerContext) error {
	rows, err := db.QueryContext(ctx, noticeLedgerProbe)
	if err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) && pe.Code == "42P01" {
			return ErrNotMigrated
		}
		return fmt.Errorf("probe ledger: %w", err)
	}
	return rows.Close()
}
