package ledger

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/notice"
)

// Evidence: every provider event of a known attempt is kept in
// notice_evidence (Settle keeps it, a replay once), whether or not it
// changed the row, so that `scan lookup` can show what each attempt met.

// Evidence is one provider event kept for one attempt of a notice.
type Evidence struct {
	Key        string     `db:"notice_key" json:"-"`
	Attempt    int        `db:"attempt" json:"attempt"`
	Kind       EventKind  `db:"kind" json:"kind"`
	Event      string     `db:"event" json:"event"`
	At         *time.Time `db:"occurred_at" json:"at,omitempty"`
	Detail     string     `db:"detail" json:"detail,omitempty"`
	RecordedAt time.Time  `db:"recorded_at" json:"recorded_at"`
}

// EvidenceOf returns the evidence kept for the notices of keys, by notice
// key, each in attempt and time order.
func EvidenceOf(ctx context.Context, db sqlx.QueryerContext, keys []string) (map[string][]Evidence, error) {
	out := map[string][]Evidence{}
	if len(keys) == 0 {
		return out, nil
	}
	var es []Evidence
	if err := sqlx.SelectContext(ctx, db, &es, noticeEvidenceList, pq.Array(keys)); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	for _, e := range es {
		out[e.Key] = append(out[e.Key], e)
	}
	return out, nil
}

// evidenceBatch gathers the evidence of one Settle call for one INSERT.
type evidenceBatch struct {
	index                                                 []int
	keys, periods, attempts, kinds, events, times, detail []string
}

func (b *evidenceBatch) add(i int, r *settleRow, attempt int, s Settlement) {
	at := ""
	if !s.At.IsZero() {
		at = s.At.UTC().Format(tsLayout)
	}
	b.index = append(b.index, i)
	b.keys = append(b.keys, r.Key)
	b.periods = append(b.periods, r.PeriodStart.Format(dateLayout))
	b.attempts = append(b.attempts, strconv.Itoa(attempt))
	b.kinds = append(b.kinds, string(s.Kind))
	b.events = append(b.events, s.Event)
	b.times = append(b.times, at)
	b.detail = append(b.detail, s.Detail)
}

// insert keeps the batch and reports, by settlement index, which events
// were kept for the first time: of the same event twice in one batch, the
// first.
func (b *evidenceBatch) insert(ctx context.Context, tx *sqlx.Tx, now time.Time) (map[int]bool, error) {
	fresh := make(map[int]bool, len(b.index))
	if len(b.index) == 0 {
		return fresh, nil
	}
	var got []struct {
		Key     string     `db:"notice_key"`
		Attempt int        `db:"attempt"`
		Event   string     `db:"event"`
		At      *time.Time `db:"occurred_at"`
	}
	if err := sqlx.SelectContext(ctx, tx, &got, noticeEvidenceInsert, pq.Array(b.keys), pq.Array(b.periods),
		pq.Array(b.attempts), pq.Array(b.kinds), pq.Array(b.events), pq.Array(b.times), pq.Array(b.detail), now.UTC()); err != nil {
		return nil, fmt.Errorf("keep evidence: %w", err)
	}
	inserted := make(map[string]bool, len(got))
	for _, g := range got {
		at := ""
		if g.At != nil {
			at = g.At.UTC().Format(tsLayout)
		}
		inserted[g.Key+"|"+strconv.Itoa(g.Attempt)+"|"+g.Event+"|"+at] = true
	}
	for j, i := range b.index {
		id := b.keys[j] + "|" + b.attempts[j] + "|" + b.events[j] + "|" + b.times[j]
		if inserted[id] {
			fresh[i] = true
			delete(inserted, id) // a second copy in the batch is a duplicate
		}
	}
	return fresh, nil
}

// Key32 returns the part of a notice that a provider event names when the
// ledger does not hold the notice: the first 32 hex characters of the key
// it echoed, else the local part of its Message-ID (the same characters,
// as notice.MessageID builds it), else "".
func Key32(key, messageID string) string {
	const n = notice.MessageIDKeyLen
	if len(key) >= n && isLowerHex(key[:n]) {
		return key[:n]
	}
	local, _, found := strings.Cut(messageID, "@")
	if found && len(local) == n && isLowerHex(local) {
		return local
	}
	return ""
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// unmatchedBatch gathers one Settle call's events of unknown notices for
// one INSERT into notice_evidence_unmatched.
type unmatchedBatch struct {
	keys, provs, attempts, kinds, states, events, times, detail []string
}

func (b *unmatchedBatch) add(s Settlement) {
	k := Key32(s.Key, s.MessageID)
	if k == "" {
		return // a provider id alone: nothing a claim could be matched by
	}
	at := ""
	if !s.At.IsZero() {
		at = s.At.UTC().Format(tsLayout)
	}
	b.keys = append(b.keys, k)
	b.provs = append(b.provs, s.ProviderID)
	b.attempts = append(b.attempts, strconv.Itoa(s.Attempt))
	b.kinds = append(b.kinds, string(s.Kind))
	b.states = append(b.states, string(s.To))
	b.events = append(b.events, s.Event)
	b.times = append(b.times, at)
	b.detail = append(b.detail, s.Detail)
}

// insert keeps the batch (a replay once) and returns the key32 of each
// event it kept for the first time.
func (b *unmatchedBatch) insert(ctx context.Context, tx *sqlx.Tx, by string, now time.Time) ([]string, error) {
	if len(b.keys) == 0 {
		return nil, nil
	}
	var fresh []string
	err := sqlx.SelectContext(ctx, tx, &fresh, noticeEvidenceUnmatchedInsert, pq.Array(b.keys), pq.Array(b.provs), pq.Array(b.attempts),
		pq.Array(b.kinds), pq.Array(b.states), pq.Array(b.events), pq.Array(b.times), pq.Array(b.detail), now.UTC(), by)
	if err != nil {
		return nil, fmt.Errorf("keep unmatched evidence: %w", err)
	}
	return fresh, nil
}
