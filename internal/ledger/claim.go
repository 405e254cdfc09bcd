package ledger

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

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
	MessageID      string // without angle brackets (notice.BareMessageID)
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
		periods[i] = c.PeriodStart.Format(dateLayout)
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
