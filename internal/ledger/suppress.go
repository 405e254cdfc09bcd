package ledger

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The sources of a suppression (notice_suppression.source).
const (
	SuppressedByOperator = "operator" // scan suppress add
	SuppressedByImport   = "import"   // scan suppress import: a provider's export
	SuppressedByEvidence = "evidence" // a hard bounce or complaint settled by Settle
	SuppressedByProvider = "provider" // the provider's own list (a suppression named in its event)
)

// The reasons a pass records for a notice it does not send by a channel
// (last_error of a failed row without an attempt): the summary's names.
const (
	ReasonSuppressed = "suppressed_address"
	ReasonNoAddress  = "no_usable_address"
	// ReasonInvalidAddress: a malformed email address and no other channel
	// left; the row waits in retry (RecordInvalidAddress).
	ReasonInvalidAddress = "invalid_address"
)

// Suppression is one entry of the suppression list. Digest is
// notice.AddressHasher's of the normalized address; the list never holds
// the address.
type Suppression struct {
	Channel   string
	Digest    []byte
	Reason    string
	Source    string
	NoticeKey string // the notice whose evidence added it; "" for none
	KeyID     []byte // the secret Digest is keyed under (notice.AddressHasher.KeyID); nil for unknown
}

// Suppressed is an entry as SuppressionList prints it: the digest's first
// 12 hex characters, no address.
type Suppressed struct {
	Channel   string    `db:"channel" json:"channel"`
	Digest    string    `db:"digest" json:"digest"`
	Reason    string    `db:"reason" json:"reason"`
	Source    string    `db:"source" json:"source"`
	NoticeKey string    `db:"notice_key" json:"notice_key,omitempty"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
	// KeyID is the id of the secret the entry is keyed under
	// (notice.AddressHasher.KeyID, hex), "" when unknown (an entry from
	// before migration 0026, or copied by a settled bounce or complaint).
	KeyID string `db:"key_id" json:"key_id"`
}

// SuppressionAdd puts entries on the list in one statement and returns how
// many were new (an entry already listed for its channel keeps its first
// reason, source and time).
func SuppressionAdd(ctx context.Context, db sqlx.ExtContext, now time.Time, entries []Suppression) (int, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	var ch, h, reason, src, key, kid []string
	for _, e := range entries {
		kid = append(kid, hex.EncodeToString(e.KeyID))
		ch = append(ch, e.Channel)
		h = append(h, hex.EncodeToString(e.Digest))
		reason = append(reason, e.Reason)
		src = append(src, e.Source)
		key = append(key, e.NoticeKey)
	}
	var out []int
	err := sqlx.SelectContext(ctx, db, &out, noticeSuppressionAdd,
		pq.Array(ch), pq.Array(h), pq.Array(reason), pq.Array(src), pq.Array(key), now.UTC(), pq.Array(kid))
	if err != nil {
		return 0, fmt.Errorf("suppression add: %w", err)
	}
	return len(out), nil
}

// SuppressionRemove takes an address's digests of channel off the list
// (its digest under the current secret and under each previous one) and
// reports whether any was there.
func SuppressionRemove(ctx context.Context, db sqlx.QueryerContext, channel string, digests [][]byte) (bool, error) {
	var out []int
	if err := sqlx.SelectContext(ctx, db, &out, noticeSuppressionRemove, channel, pq.ByteaArray(digests)); err != nil {
		return false, fmt.Errorf("suppression remove: %w", err)
	}
	return len(out) > 0, nil
}

// SuppressionList returns up to limit entries, oldest first; with keyIDs,
// only those keyed under one of them (hex ids, as Suppressed.KeyID).
func SuppressionList(ctx context.Context, db sqlx.QueryerContext, limit int, keyIDs ...string) ([]Suppressed, error) {
	var out []Suppressed
	if keyIDs == nil {
		keyIDs = []string{}
	}
	if err := sqlx.SelectContext(ctx, db, &out, noticeSuppressionList, limit, pq.Array(keyIDs)); err != nil {
		return nil, fmt.Errorf("suppression list: %w", err)
	}
	return out, nil
}

// SuppressionKeyCount is how many entries of a channel are keyed under
// one secret (KeyID, hex; "" for unknown).
type SuppressionKeyCount struct {
	Channel string `db:"channel"`
	KeyID   string `db:"key_id"`
	Count   int    `db:"count"`
}

// SuppressionCountByKey returns the number of entries per channel and
// secret.
func SuppressionCountByKey(ctx context.Context, db sqlx.QueryerContext) ([]SuppressionKeyCount, error) {
	var out []SuppressionKeyCount
	if err := sqlx.SelectContext(ctx, db, &out, noticeSuppressionCountByKey); err != nil {
		return nil, fmt.Errorf("suppression count: %w", err)
	}
	return out, nil
}

// SuppressionCount returns the number of entries per channel.
func SuppressionCount(ctx context.Context, db sqlx.QueryerContext) (map[string]int, error) {
	var rows []struct {
		Channel string `db:"channel"`
		Count   int    `db:"count"`
	}
	if err := sqlx.SelectContext(ctx, db, &rows, noticeSuppressionCount); err != nil {
		return nil, fmt.Errorf("suppression count: %w", err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Channel] = r.Count
	}
	return out, nil
}

// SuppressionMatch returns, for a batch of digests of one channel, which
// are on the list (by index into digests; nil digests never are): one
// statement for the whole batch.
func SuppressionMatch(ctx context.Context, db sqlx.QueryerContext, channel string, digests [][]byte) ([]bool, error) {
	return SuppressionMatchRekey(ctx, db, channel, digests, nil, nil)
}

// SuppressionMatchRekey is SuppressionMatch across a secret rotation:
// previous[i] are digests[i]'s address's digests under each previous
// secret, and an entry found under one of them is re-recorded under
// digests[i], with keyID (notice.AddressHasher.KeyID), in the same
// statement; that digest then matches. Without previous digests it is
// SuppressionMatch's read-only statement.
func SuppressionMatchRekey(ctx context.Context, db sqlx.QueryerContext, channel string, digests [][]byte, previous [][][]byte, keyID []byte) ([]bool, error) {
	out := make([]bool, len(digests))
	if len(digests) == 0 {
		return out, nil
	}
	var pos []int
	var buf pgArray
	prev, rekey := previousArray(&buf, len(previous) == len(digests), len(digests), func(i int) [][]byte { return previous[i] })
	var err error
	if rekey {
		h := make([]string, len(digests))
		for i, d := range digests {
			h[i] = hex.EncodeToString(d)
		}
		err = sqlx.SelectContext(ctx, db, &pos, noticeSuppressionMatchRekey, channel, pq.Array(h), prev, hex.EncodeToString(keyID))
	} else {
		err = sqlx.SelectContext(ctx, db, &pos, noticeSuppressionMatch, channel, pq.ByteaArray(digests))
	}
	if err != nil {
		return nil, fmt.Errorf("suppression match: %w", err)
	}
	for _, p := range pos {
		if p >= 1 && p <= len(out) && digests[p-1] != nil {
			out[p-1] = true
		}
	}
	return out, nil
}

// RecordUnreached records claims the pass will not send by channel (see
// ReasonSuppressed, ReasonNoAddress) as failed rows without an attempt,
// in one statement, and returns the keys it inserted (a notice already in
// the ledger is skipped). opt.Channel names the channel.
func RecordUnreached(ctx context.Context, db sqlx.ExtContext, opt ClaimOptions, reason string, claims []Claim) ([]string, error) {
	return recordRows(ctx, db, Failed, opt, reason, claims)
}

// RecordInvalidAddress records email claims whose address is malformed
// and that have no other channel left as retry rows with reason
// invalid_address, without an attempt, in one statement, and returns the
// keys it inserted (a notice already in the ledger is skipped). The retry
// stream re-checks them each pass: re-claimed and sent once the address
// is fixed, missed when the window closes. scan undelivered lists them
// while the window is open.
func RecordInvalidAddress(ctx context.Context, db sqlx.ExtContext, opt ClaimOptions, claims []Claim) ([]string, error) {
	return recordRows(ctx, db, Retry, opt, ReasonInvalidAddress, claims)
}

// CountInvalidAddress counts the retry rows waiting with reason
// invalid_address whose window is still open at now.
func CountInvalidAddress(ctx context.Context, db sqlx.QueryerContext, now time.Time) (int, error) {
	var n int
	if err := sqlx.GetContext(ctx, db, &n, noticeCountInvalidAddress, now.UTC()); err != nil {
		return 0, fmt.Errorf("count invalid addresses: %w", err)
	}
	return n, nil
}

// recordRows inserts claims as rows of state with reason, without an
// attempt (noticeRecordUnreached).
func recordRows(ctx context.Context, db sqlx.ExtContext, state State, opt ClaimOptions, reason string, claims []Claim) ([]string, error) {
	if len(claims) == 0 {
		return nil, nil
	}
	if err := ensurePartitions(ctx, db, claimMonths(claims)); err != nil {
		return nil, fmt.Errorf("record unreached: %w", err)
	}
	cols := make([][]string, 9)
	for _, c := range claims {
		for i, v := range []string{c.Key, c.SubscriptionID, c.Kind, c.PeriodStart.Format(dateLayout),
			strconv.Itoa(c.Revision), c.RenewsAt.UTC().Format(tsLayout), c.WindowClosesAt.UTC().Format(tsLayout),
			c.Domain, hex.EncodeToString(c.AddressHMAC)} {
			cols[i] = append(cols[i], v)
		}
	}
	args := make([]any, 0, 14)
	for _, c := range cols {
		args = append(args, pq.Array(c))
	}
	ch := opt.Channel
	if ch == "" {
		ch = "email"
	}
	args = append(args, opt.Now.UTC(), opt.RunID, ch, reason, string(state))
	var out []string
	if err := sqlx.SelectContext(ctx, db, &out, noticeRecordUnreached, args...); err != nil {
		return nil, fmt.Errorf("record unreached: %w", err)
	}
	return out, nil
}

// MarkUnreached fails the retry rows of keys, with reason, instead of
// re-claiming them (their address is now suppressed); it returns the keys
// it changed.
func MarkUnreached(ctx context.Context, db sqlx.QueryerContext, now time.Time, reason string, keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var out []string
	if err := sqlx.SelectContext(ctx, db, &out, noticeMarkUnreached, pq.Array(keys), reason, now.UTC()); err != nil {
		return nil, fmt.Errorf("mark unreached: %w", err)
	}
	return out, nil
}

// suppressionOf says whether a settlement puts its notice's recipient on
// the suppression list, with what reason and source: a hard bounce or a
// complaint (evidence), or a "not sent" the provider made failed because
// the address is on its own list (provider; see package reconcile's
// notSent, and Twilio's 21610).
func suppressionOf(s Settlement) (reason, source string, ok bool) {
	switch {
	case s.Kind == KindBounceHard:
		return "hard bounce", SuppressedByEvidence, true
	case s.Kind == KindComplaint:
		return "complaint", SuppressedByEvidence, true
	case s.Kind.NotSent() && s.To == Failed:
		r := strings.TrimSpace(s.Event + " " + s.Detail)
		if len(r) > 200 {
			r = r[:200]
		}
		return r, SuppressedByProvider, true
	}
	return "", "", false
}

// suppressSettled is Settle's hook: in its transaction, it puts on the
// list the recipient of every notice a batch's hard bounce, complaint or
// provider suppression names, whatever the event did to the row's state
// (a complaint leaves a row sent; the address still wants no more mail).
// find is Settle's look-up of a settlement's row.
func suppressSettled(ctx context.Context, tx *sqlx.Tx, now time.Time, ss []Settlement, find func(Settlement) *settleRow) error {
	var keys, reasons, sources []string
	for _, s := range ss {
		reason, source, ok := suppressionOf(s)
		if !ok {
			continue
		}
		if r := find(s.normalized()); r != nil {
			keys, reasons, sources = append(keys, r.Key), append(reasons, reason), append(sources, source)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, noticeSuppressionFromLedger, pq.Array(keys), pq.Array(reasons), pq.Array(sources), now.UTC()); err != nil {
		return fmt.Errorf("settle: suppress: %w", err)
	}
	return nil
}

// SuppressionAny reports whether channel's list has any entry: a pass
// asks once, and an empty list costs its batches no probe.
func SuppressionAny(ctx context.Context, db sqlx.QueryerContext, channel string) (bool, error) {
	var ok bool
	if err := sqlx.GetContext(ctx, db, &ok, noticeSuppressionAny, channel); err != nil {
		return false, fmt.Errorf("suppression any: %w", err)
	}
	return ok, nil
}

// SuppressionAnyNotUnder reports whether channel's list has an entry not
// keyed under keyID (another secret's, or unknown): while it has, a pass
// with previous secrets probes them too. At most one read of the list.
func SuppressionAnyNotUnder(ctx context.Context, db sqlx.QueryerContext, channel string, keyID []byte) (bool, error) {
	var ok bool
	if err := sqlx.GetContext(ctx, db, &ok, noticeSuppressionAnyNotUnder, channel, keyID); err != nil {
		return false, fmt.Errorf("suppression keys: %w", err)
	}
	return ok, nil
}
