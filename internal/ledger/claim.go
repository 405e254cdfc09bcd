package ledger

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/notice"
)

// Claim is one notice to claim: its business tuple and what the ledger
// keeps beside it. Key is derived by the caller (package notice, from the
// tuple and the batch's channel); the ledger never sees the secret. The
// channel is not a field: one claim statement is one channel's batch
// (ClaimOptions.Channel), which its suppression probe reads.
type Claim struct {
	Key string
	notice.Tuple
	RenewsAt       time.Time
	WindowClosesAt time.Time
	Domain         string
	MessageID      string // without angle brackets (notice.BareMessageID)
	CancelToken    string
	// Rule is the text of the window rule the notice's deadline used,
	// and TimeZone the IANA zone it was evaluated in (issue 27); ""
	// records NULL.
	Rule     string
	TimeZone string
	// AddressHMAC is the recipient's suppression digest
	// (notice.AddressHasher.Digest), kept so that a hard bounce or
	// complaint settled later suppresses the address; nil for none.
	AddressHMAC []byte
	// PreviousHMACs are the same address's digests under each previous
	// secret (NOTICE_KEY_SECRET_PREVIOUS), for the suppression probe: an
	// entry found under one is re-recorded under AddressHMAC in the claim
	// statement (see noticeSuppressionRekey). Empty without a rotation.
	PreviousHMACs [][]byte
}

// Won is a row that a claim statement inserted or re-claimed. Its
// CancelToken is the one to put in the message: for a corrected notice it
// is the stored token of the revision it supersedes. Attempt numbers the
// claims of the notice: 1 for the first, one more for each re-claim (0
// for a row inserted Missed); the message carries it beside the key, so
// that a provider event names the attempt it is about.
//
// Witnessed is set for a claim that the second witness settled: the
// provider's evidence of its key, kept before the ledger had the notice
// (see Settle), proves it went out, so it was recorded sent (failed for a
// hard bounce) and must not be sent; it is never set by Reclaim.
//
// Suppressed is set for a claim or retry row whose recipient was on the
// channel's suppression list (ClaimOptions.Suppression): recorded failed
// with ReasonSuppressed and no attempt, in the same statement, and must
// not be sent by this channel.
type Won struct {
	Key         string `db:"notice_key"`
	CancelToken string `db:"cancel_token"`
	Attempt     int    `db:"attempts"`
	Witnessed   bool   `db:"witnessed"`
	Suppressed  bool   `db:"suppressed"`
}

// ClaimOptions are the per-pass values every claim of a batch shares.
type ClaimOptions struct {
	State      State     // Claimed for notices to send, Missed for closed windows
	Now        time.Time // claimed_at
	RunID      string
	RedirectTo string // recorded when a staging redirect is in force
	Channel    string // the batch's channel: "" or "email", or "sms"
	// Suppression makes the claim statement probe Channel's suppression
	// list for each claim's digest (Claim.AddressHMAC), a pass sets it
	// when the list had entries at its start: a listed recipient's notice
	// is recorded failed (ReasonSuppressed) instead of claimed, and
	// returned with Won.Suppressed. Without it nothing is probed.
	Suppression bool
	// KeyID names the secret the batch's digests are keyed under
	// (notice.AddressHasher.KeyID): an entry the probe finds under a
	// previous digest (Claim.PreviousHMACs) is re-recorded under the
	// current one with it.
	KeyID []byte
	// Summary, when set with Suppression, is the list's summary the pass
	// loaded at its start: each claim batch refreshes it in its
	// transaction and probes only the claims whose digests hit it (see
	// noticeClaim). Nil probes every claim.
	Summary *SuppressionSummary
}

// Insert claims a batch of notices to send (opt.State Claimed), in one
// INSERT ... ON CONFLICT DO NOTHING RETURNING statement, and returns the
// rows it inserted; the caller commits before sending anything. A notice
// already in the ledger is not an error: it is absent from the result,
// and the caller counts it as suppressed. The claim commits synchronously
// whatever the server's default (durably): in its own transaction when db
// is the pool, else at the caller's COMMIT. Notices whose window closed
// unclaimed are RecordMissed's.
func Insert(ctx context.Context, db sqlx.ExtContext, opt ClaimOptions, claims []Claim) ([]Won, error) {
	won, err := insertBatch(ctx, db, opt, claims)
	if err != nil {
		return nil, fmt.Errorf("claim batch: %w", err)
	}
	return won, nil
}

// RecordMissed records as missed, at now by run runID, a batch of
// notices whose window closed with no ledger row: nothing is sent for
// them. One statement (Insert's, in state Missed: no witness, no
// suppression probe); it returns how many rows it inserted (a notice
// already in the ledger is skipped).
func RecordMissed(ctx context.Context, db sqlx.ExtContext, now time.Time, runID string, claims []Claim) (int, error) {
	won, err := insertBatch(ctx, db, ClaimOptions{State: Missed, Now: now, RunID: runID}, claims)
	if err != nil {
		return 0, fmt.Errorf("record missed: %w", err)
	}
	return len(won), nil
}

// insertBatch runs noticeClaim for claims in state opt.State, durably.
func insertBatch(ctx context.Context, db sqlx.ExtContext, opt ClaimOptions, claims []Claim) ([]Won, error) {
	if len(claims) == 0 {
		return nil, nil
	}
	if err := ensurePartitions(ctx, db, claimMonths(claims)); err != nil {
		return nil, err
	}
	var buf pgArray
	a, err := claimArrays(&buf, claims)
	if err != nil {
		return nil, err
	}
	k32 := key32Array(&buf, claims)
	prev, rekey := previousArray(&buf, opt.Suppression && opt.State == Claimed, len(claims), func(i int) [][]byte { return claims[i].PreviousHMACs })
	var out []Won
	claim := func(stmt string) error {
		out = out[:0]
		return durably(ctx, db, func(q sqlx.ExtContext) error {
			probe, err := claimFilter(ctx, q, opt, claims)
			if err != nil {
				return err
			}
			return sqlx.SelectContext(ctx, q, &out, stmt,
				a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9],
				string(opt.State), opt.Now.UTC(), opt.RunID, opt.RedirectTo, a[10], a[11], opt.Channel, a[12], k32,
				opt.Suppression, ReasonSuppressed, prev, rekey, hex.EncodeToString(opt.KeyID), buf.boolsOrNull(probe))
		})
	}
	// In a transaction of its own, the plain insert first, and ON
	// CONFLICT only when another session inserted one of the rows
	// meanwhile (noticeClaimUnseen), or the two sessions' inserts waited on
	// each other (a deadlock: PostgreSQL rolled this one back). In the
	// caller's transaction a failed statement would abort it: ON CONFLICT
	// at once.
	if _, own := db.(*sqlx.DB); own {
		err := claim(noticeClaimUnseen)
		if err == nil {
			return out, nil
		}
		if !isConflict(err) {
			return nil, err
		}
	}
	if err := claim(noticeClaim); err != nil {
		return nil, err
	}
	return out, nil
}

// claimFilter returns which claims the claim statement probes (its $25):
// nil (all) unless opt probes with a summary.
func claimFilter(ctx context.Context, q sqlx.QueryerContext, opt ClaimOptions, claims []Claim) ([]bool, error) {
	if !opt.Suppression || opt.State != Claimed {
		return nil, nil
	}
	return opt.Summary.probeFilter(ctx, q, len(claims),
		func(i int) []byte { return claims[i].AddressHMAC }, func(i int) [][]byte { return claims[i].PreviousHMACs })
}

// isConflict reports whether err is PostgreSQL's unique_violation (23505)
// or deadlock_detected (40P01): the plain insert met another session's
// rows, and its transaction was rolled back whole.
func isConflict(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && (pqErr.Code == "23505" || pqErr.Code == "40P01")
}

// durably runs fn, a claiming statement, in the transaction that makes it
// durable: given the pool (*sqlx.DB), a transaction of its own (BEGIN, fn,
// COMMIT: two round trips more per batch of claims, not per claim), whose
// COMMIT returns only once the claim is flushed; given a transaction, in
// it, and the caller's COMMIT is the synchronous one. The claiming
// statements (noticeClaim, noticeReclaim) set synchronous_commit at least
// on themselves (noticeClaimDurable, in a one-time filter of their last
// SELECT, which runs whatever rows they insert or update), whatever the
// server's, database's or role's default: COMMIT reads it, so a claim is
// durable when its transaction's COMMIT returns, before anything of it
// leaves the process. No statement of its own sets it (one round trip
// less per batch; issue 39).
func durably(ctx context.Context, db sqlx.ExtContext, fn func(sqlx.ExtContext) error) error {
	pool, ok := db.(*sqlx.DB)
	if !ok {
		return fn(db)
	}
	return WithTx(ctx, pool, func(tx *sqlx.Tx) error { return fn(tx) })
}

// claimMonths returns the first day of each month the claims' periods
// fall in ("2026-03-01"), once each: the partitions the batch needs.
func claimMonths(claims []Claim) []string {
	var months []string
	var last [2]int
	for _, c := range claims {
		y, m, _ := c.PeriodStart.Date()
		if [2]int{y, int(m)} == last {
			continue
		}
		last = [2]int{y, int(m)}
		month := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).Format(dateLayout)
		if !slices.Contains(months, month) {
			months = append(months, month)
		}
	}
	return months
}

// claimArrays returns noticeClaim's thirteen column parameters ($1-$10,
// $15-$16 the rules and zones, $18 the address digests), the claims'
// columns, as binary arrays (pgArray) written into a, the batch's one
// buffer (with room for key32Array's and previousArray's too): text[] but
// $4 date[], $5 int4[], $6-$7 timestamptz[] and $18 bytea[] (NULL for
// none), which the server receives as they are instead of parsing an
// array literal and casting (or decoding) every element from text. No
// element allocates.
func claimArrays(a *pgArray, claims []Claim) ([13]any, error) {
	var out [13]any
	for i := range claims {
		if err := checkInt4("revision", claims[i].Revision); err != nil {
			return out, fmt.Errorf("claim %d: %w", i, err)
		}
	}
	a.grow(15*arrayHeader + len(claims)*(15*4+64+32+16+4+4+8+8+10+2+2*25+32+64+44+80+20+32+32+1))
	column := func(i int, oid uint32, elem func(c *Claim)) {
		a.begin(oid)
		for j := range claims {
			elem(&claims[j])
		}
		out[i] = a.end()
	}
	column(0, oidText, func(c *Claim) { a.text(c.Key) })
	column(1, oidText, func(c *Claim) { a.text(c.SubscriptionID) })
	column(2, oidText, func(c *Claim) { a.text(c.Kind) })
	column(3, oidDate, func(c *Claim) { a.date(c.PeriodStart) })
	column(4, oidInt4, func(c *Claim) { a.int4(c.Revision) })
	column(5, oidTimestamptz, func(c *Claim) { a.timestamptz(c.RenewsAt) })
	column(6, oidTimestamptz, func(c *Claim) { a.timestamptz(c.WindowClosesAt) })
	column(7, oidText, func(c *Claim) { a.text(c.Domain) })
	column(8, oidText, func(c *Claim) { a.text(c.MessageID) })
	column(9, oidText, func(c *Claim) { a.text(c.CancelToken) })
	column(10, oidText, func(c *Claim) { a.text(c.Rule) })
	column(11, oidText, func(c *Claim) { a.text(c.TimeZone) })
	column(12, oidBytea, func(c *Claim) { a.byteaOrNull(c.AddressHMAC) })
	return out, nil
}

// previousArray returns the text[] (pgArray) of the previous digests of
// n claims or digests (prev(i), each list as its hex digests joined by
// commas, "" for none) that the suppression probe's re-keying reads, and
// whether any claim has one; with probe false, or no previous digest, it
// is empty and false, and the statement folds the re-keying away.
func previousArray(a *pgArray, probe bool, n int, prev func(i int) [][]byte) ([]byte, bool) {
	found := false
	for i := 0; probe && i < n && !found; i++ {
		found = len(prev(i)) > 0
	}
	if !found {
		a.begin(oidText)
		return a.end(), false
	}
	a.grow(arrayHeader + n*(4+65*len(prev(0))))
	a.begin(oidText)
	for i := range n {
		at := a.open()
		for j, d := range prev(i) {
			if j > 0 {
				a.b = append(a.b, ',')
			}
			a.b = hex.AppendEncode(a.b, d)
		}
		a.close(at)
	}
	return a.end(), true
}

// key32Array returns the text[] (pgArray) of the first 32 characters of
// each claim's key: what the claim's second witness looks the unmatched
// evidence up by. A key shorter than 32 stays whole (it matches nothing).
func key32Array(a *pgArray, claims []Claim) []byte {
	a.grow(arrayHeader + len(claims)*36)
	a.begin(oidText)
	for i := range claims {
		k := claims[i].Key
		a.text(k[:min(32, len(k))])
	}
	return a.end()
}

// Reclaim takes back, durably as Insert claims (durably), the rows of keys that are in state
// retry with their window still open at opt.Now; it returns those it won.
// It probes no suppression list (see ReclaimUnlessSuppressed).
func Reclaim(ctx context.Context, db sqlx.ExtContext, opt ClaimOptions, keys []string) ([]Won, error) {
	opt.Suppression = false
	return ReclaimUnlessSuppressed(ctx, db, opt, keys, nil, nil)
}

// ReclaimUnlessSuppressed is Reclaim with the suppression probe of
// opt.Suppression, in the same statement: digests[i] is the digest of the
// address the pass would now send keys[i] to (nil for none). A row whose
// digest is on opt.Channel's list is failed with ReasonSuppressed instead
// of re-claimed, and returned with Won.Suppressed.
//
// previous[i], when given, are keys[i]'s recipient's digests under each
// previous secret: an entry found under one of them is re-recorded under
// digests[i] in the same statement (noticeSuppressionRekey).
func ReclaimUnlessSuppressed(ctx context.Context, db sqlx.ExtContext, opt ClaimOptions, keys []string, digests [][]byte, previous [][][]byte) ([]Won, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var buf pgArray
	k, h := reclaimArrays(&buf, keys, opt.Suppression, digests)
	prev, rekey := previousArray(&buf, opt.Suppression && len(previous) == len(keys), len(keys), func(i int) [][]byte { return previous[i] })
	var out []Won
	err := durably(ctx, db, func(q sqlx.ExtContext) error {
		var probe []bool
		if opt.Suppression {
			var err error
			probe, err = opt.Summary.probeFilter(ctx, q, len(keys), func(i int) []byte { return at(digests, i) }, func(i int) [][]byte { return at(previous, i) })
			if err != nil {
				return err
			}
		}
		return sqlx.SelectContext(ctx, q, &out, noticeReclaim, k, opt.Now.UTC(), opt.RunID, opt.RedirectTo,
			h, opt.Suppression, opt.Channel, ReasonSuppressed, prev, rekey, hex.EncodeToString(opt.KeyID), buf.boolsOrNull(probe))
	})
	if err != nil {
		return nil, fmt.Errorf("reclaim retries: %w", err)
	}
	return out, nil
}

// at returns s[i], or the zero value past s's end.
func at[T any](s []T, i int) T {
	var zero T
	if i < len(s) {
		return s[i]
	}
	return zero
}

// reclaimArrays returns noticeReclaim's $1, keys (text[]), and $5, the
// digests (bytea[], NULL for none, and for all without probe), as binary
// arrays (pgArray) in a, the batch's one buffer.
func reclaimArrays(a *pgArray, keys []string, probe bool, digests [][]byte) (k, h []byte) {
	a.grow(3*arrayHeader + len(keys)*(12+64+32+1))
	a.begin(oidText)
	for _, key := range keys {
		a.text(key)
	}
	k = a.end()
	a.begin(oidBytea)
	for i := range keys {
		if probe && i < len(digests) {
			a.byteaOrNull(digests[i])
		} else {
			a.null()
		}
	}
	return k, a.end()
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

// CancelRetries ends the retry rows of keys whose subscription is no
// longer active as a recorded no-op (Cancelled, reason "cancelled") at
// now, and returns how many it ended.
func CancelRetries(ctx context.Context, db sqlx.ExtContext, keys []string, now time.Time) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	res, err := db.ExecContext(ctx, noticeCancelRetries, pq.Array(keys), now.UTC())
	if err != nil {
		return 0, fmt.Errorf("cancel retries: %w", err)
	}
	return res.RowsAffected()
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
