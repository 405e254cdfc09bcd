package ledger

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

const tsLayout = time.RFC3339Nano

// Claim is one notice to claim. Key is derived by the caller (package
// notice); the ledger never sees the secret.
type Claim struct {
	Key            string
	SubscriptionID string
	Kind           string
	PeriodStart    time.Time
	Revision       int
	RenewsAt       time.Time
	WindowClosesAt time.Time
	Domain         string
	MessageID      string // without angle brackets
	CancelToken    string
}

// Won is a row that a claim statement inserted or re-claimed. Its
// CancelToken is the one to put in the message: for a corrected notice it
// is the stored token of the revision it supersedes. Attempt numbers the
// claims of the notice: 1 for the first, one more for each re-claim (0
// for a row inserted Missed); the message carries it beside the key, so
// that a provider event names the attempt it is about.
type Won struct {
	Key         string `db:"notice_key"`
	CancelToken string `db:"cancel_token"`
	Attempt     int    `db:"attempts"`
}

// ClaimOptions are the per-pass values every claim of a batch shares.
type ClaimOptions struct {
	State      State     // Claimed for notices to send, Missed for closed windows
	Now        time.Time // claimed_at
	RunID      string
	RedirectTo string // recorded when a staging redirect is in force
}

// Insert adds a batch of rows in state opt.State, in one INSERT ... ON
// CONFLICT DO NOTHING RETURNING statement, and returns the rows it
// inserted. With Claimed it claims notices to send (the caller commits
// before sending anything); with Missed it records notices whose window
// closed unclaimed (nothing is sent for those). A notice already in the
// ledger is not an error: it is absent from the result, and the caller
// counts it as suppressed.
func Insert(ctx context.Context, db sqlx.ExtContext, opt ClaimOptions, claims []Claim) ([]Won, error) {
	if len(claims) == 0 {
		return nil, nil
	}
	n := len(claims)
	var (
		keys, subs, kinds, periods, revs = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		renews, closes, domains, msgIDs  = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		tokens                           = make([]string, n)
	)
	for i, c := range claims {
		keys[i], subs[i], kinds[i] = c.Key, c.SubscriptionID, c.Kind
		periods[i] = c.PeriodStart.Format("2006-01-02")
		revs[i] = strconv.Itoa(c.Revision)
		renews[i] = c.RenewsAt.UTC().Format(tsLayout)
		closes[i] = c.WindowClosesAt.UTC().Format(tsLayout)
		domains[i], msgIDs[i], tokens[i] = c.Domain, c.MessageID, c.CancelToken
	}
	if err := ensurePartitions(ctx, db, periods); err != nil {
		return nil, fmt.Errorf("claim batch: %w", err)
	}
	var out []Won
	err := sqlx.SelectContext(ctx, db, &out, noticeClaim,
		pq.Array(keys), pq.Array(subs), pq.Array(kinds), pq.Array(periods), pq.Array(revs),
		pq.Array(renews), pq.Array(closes), pq.Array(domains), pq.Array(msgIDs), pq.Array(tokens),
		string(opt.State), opt.Now.UTC(), opt.RunID, opt.RedirectTo)
	if err != nil {
		return nil, fmt.Errorf("claim batch: %w", err)
	}
	return out, nil
}

// Reclaim takes back, by compare-and-set, the rows of keys that are in state
// retry with their window still open at opt.Now; it returns those it won.
func Reclaim(ctx context.Context, db sqlx.ExtContext, opt ClaimOptions, keys []string) ([]Won, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var out []Won
	if err := sqlx.SelectContext(ctx, db, &out, noticeReclaim, pq.Array(keys), opt.Now.UTC(), opt.RunID, opt.RedirectTo); err != nil {
		return nil, fmt.Errorf("reclaim retries: %w", err)
	}
	return out, nil
}

// Outcome is what became of one claimed notice.
type Outcome struct {
	Key string
	// PeriodStart is the claim's billing period. Given, the outcome is
	// found in that month's partition alone; zero, every month is probed.
	PeriodStart time.Time
	State       State // Sent, Retry, Failed; Claimed for an unknown outcome
	SentAt      time.Time
	ProviderID  string
	// Attempts is how many times the pass handed the message over within
	// this claim (the dispatcher's retries); logged, not stored: the
	// ledger's attempts counts claims (Won.Attempt).
	Attempts int
	// Digest is the SHA-256 of the exact message handed to the provider,
	// stored with the outcome (an ambiguous one too); nil when nothing was
	// handed over.
	Digest []byte
	Error  string
}

// RecordOutcomes records a batch of outcomes of run runID in one statement,
// in a transaction of its own, and returns how many rows changed. Rows no
// longer claimed by that run (resolved by an operator meanwhile) are left
// alone.
func RecordOutcomes(ctx context.Context, db *sqlx.DB, runID string, now time.Time, outs []Outcome) (int64, error) {
	if len(outs) == 0 {
		return 0, nil
	}
	n := len(outs)
	keys, states, sentAt, prov, digests, errs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	var lo, hi time.Time
	everyMonth := false
	for i, o := range outs {
		keys[i], states[i], prov[i], errs[i] = o.Key, string(o.State), o.ProviderID, o.Error
		if !o.SentAt.IsZero() {
			sentAt[i] = o.SentAt.UTC().Format(tsLayout)
		}
		if len(o.Digest) > 0 {
			digests[i] = hex.EncodeToString(o.Digest)
		}
		switch p := o.PeriodStart; {
		case p.IsZero():
			everyMonth = true
		case lo.IsZero():
			lo, hi = p, p
		case p.Before(lo):
			lo = p
		case p.After(hi):
			hi = p
		}
	}
	var from, to any // NULL: every month
	if !everyMonth {
		first := time.Date(lo.Year(), lo.Month(), 1, 0, 0, 0, 0, time.UTC)
		last := time.Date(hi.Year(), hi.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		from, to = first.Format("2006-01-02"), last.Format("2006-01-02")
	}
	var changed int64
	err := WithTx(ctx, db, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, noticeOutcomePlan); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, noticeRecordOutcome, pq.Array(keys), pq.Array(states), pq.Array(sentAt),
			pq.Array(prov), pq.Array(digests), pq.Array(errs), from, to, runID, now.UTC())
		if err != nil {
			return err
		}
		changed, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record outcomes: %w", err)
	}
	return changed, nil
}

// ensurePartitions makes sure that every month of periods (YYYY-MM-DD)
// has its partition before rows of it are inserted, so that none lands in
// the DEFAULT partition. One statement with each distinct month once.
func ensurePartitions(ctx context.Context, db sqlx.ExtContext, periods []string) error {
	seen := make(map[string]bool, 2)
	var months []string
	for _, p := range periods {
		if len(p) < 7 {
			continue
		}
		m := p[:7] + "-01"
		if !seen[m] {
			seen[m] = true
			months = append(months, m)
		}
	}
	if len(months) == 0 {
		return nil
	}
	if _, err := db.ExecContext(ctx, noticePartitionsEnsure, pq.Array(months)); err != nil {
		return fmt.Errorf("create partitions: %w", err)
	}
	return nil
}

// Retries returns one page of kind's rows in state retry whose window is
// still open at now, in key order after after (start with ""), at most
// limit: the rows a pass may claim again with Reclaim. Their business
// tuples name the subscriptions to look up; fewer than limit rows means
// the last page.
func Retries(ctx context.Context, db sqlx.QueryerContext, kind string, now time.Time, after string, limit int) ([]TupleKey, error) {
	var out []TupleKey
	if err := sqlx.SelectContext(ctx, db, &out, noticeListRetry, kind, now.UTC(), after, limit); err != nil {
		return nil, fmt.Errorf("list retries: %w", err)
	}
	return out, nil
}

// ExpireRetries marks missed every retry row whose window closed by now.
func ExpireRetries(ctx context.Context, db sqlx.ExtContext, now time.Time) (int64, error) {
	res, err := db.ExecContext(ctx, noticeExpireRetries, now.UTC())
	if err != nil {
		return 0, fmt.Errorf("expire retries: %w", err)
	}
	return res.RowsAffected()
}

// CountExpiringRetries counts what ExpireRetries would mark missed.
func CountExpiringRetries(ctx context.Context, db sqlx.QueryerContext, now time.Time) (int, error) {
	var n int
	if err := sqlx.GetContext(ctx, db, &n, noticeCountExpiringRetries, now.UTC()); err != nil {
		return 0, fmt.Errorf("count expiring retries: %w", err)
	}
	return n, nil
}
