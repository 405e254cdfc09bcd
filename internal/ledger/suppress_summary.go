package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// summaryChunkBits is how many bits one row of notice_suppression_summary
// holds (sql/0042): the chunk is a digest's first 14 bits, the position
// in it the next 10.
const summaryChunkBits = 1024

// SuppressionSummary is a pass's copy of the suppression list's summary
// (notice_suppression_summary, sql/0042): a bit set of 2^24 bits over
// every channel's digests, set where some entry's digest starts with the
// bit's 24 bits. A digest whose bit is clear is not on the list as of the
// summary's last read, and the claim statements do not probe it: with 1M
// entries about 94% of the probes are skipped (ClaimOptions.Summary).
//
// Load reads it whole (2 MB); Refresh reads only the chunks written since
// the last read. Insert and ReclaimUnlessSuppressed refresh it in the
// claim's transaction, before the claim statement. It is safe for
// concurrent use (the email and sms stages share one).
type SuppressionSummary struct {
	mu     sync.Mutex
	bits   []byte // 2^24 bits, as the chunks hold them: bit i is byte i/8's 0x80>>(i%8)
	since  string // xid8: the xmin of the last read's snapshot ("0" before the first)
	chunks int    // chunks read in all
}

// ErrSummaryDenied is LoadSuppressionSummary's error when the role may
// not read notice_suppression_summary (insufficient_privilege): a pass
// then probes every notice, as without the summary.
var ErrSummaryDenied = errors.New("suppression summary: not readable by this role")

// NewSuppressionSummary returns an empty summary: every digest misses
// until Load or Refresh reads the table.
func NewSuppressionSummary() *SuppressionSummary {
	return &SuppressionSummary{bits: make([]byte, 1<<24/8), since: "0"}
}

// LoadSuppressionSummary reads the whole summary (a pass's start): its
// chunks with a bit set, and the snapshot's xmin.
func LoadSuppressionSummary(ctx context.Context, db sqlx.QueryerContext) (*SuppressionSummary, error) {
	s := NewSuppressionSummary()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.read(ctx, db, noticeSuppressionSummaryLoad); err != nil {
		return nil, err
	}
	return s, nil
}

// Refresh reads, in one indexed statement (noticeSuppressionSummaryRead),
// the chunks written by any transaction that the last read's snapshot did
// not see, and the new snapshot's xmin. Every entry committed before the
// statement's snapshot then has its bit set.
func (s *SuppressionSummary) Refresh(ctx context.Context, db sqlx.QueryerContext) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read(ctx, db, noticeSuppressionSummaryRead)
}

// read runs stmt (noticeSuppressionSummaryRead or ...Load) and puts the
// chunks it returns into the copy.
func (s *SuppressionSummary) read(ctx context.Context, db sqlx.QueryerContext, stmt string) error {
	rows, err := db.QueryContext(ctx, stmt, s.since)
	if pqErr := (*pq.Error)(nil); errors.As(err, &pqErr) && pqErr.Code == "42501" {
		return fmt.Errorf("%w: %w", ErrSummaryDenied, err)
	}
	if err != nil {
		return fmt.Errorf("suppression summary: %w", err)
	}
	defer rows.Close()
	var xmin string
	for rows.Next() {
		var chunk sql.NullInt64
		var bits sql.RawBytes
		if err := rows.Scan(&xmin, &chunk, &bits); err != nil {
			return fmt.Errorf("suppression summary: %w", err)
		}
		if !chunk.Valid {
			continue // nothing changed: the xmin alone
		}
		// bits is varbit_send's: the bit length (4 bytes), then the
		// bits, the leftmost first.
		if chunk.Int64 < 0 || chunk.Int64 >= 1<<24/summaryChunkBits || len(bits) != 4+summaryChunkBits/8 {
			return fmt.Errorf("suppression summary: chunk %d of %d bytes", chunk.Int64, len(bits))
		}
		// A chunk's row holds every bit its writers set (each writer ORs
		// onto the version it finds): it replaces the copy's.
		copy(s.bits[chunk.Int64*summaryChunkBits/8:], bits[4:])
		s.chunks++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("suppression summary: %w", err)
	}
	if xmin == "" {
		return fmt.Errorf("suppression summary: no snapshot")
	}
	s.since = xmin
	return nil
}

// Chunks returns how many chunk rows the summary has read in all: the
// chunks not all clear at Load, then those that changed.
func (s *SuppressionSummary) Chunks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chunks
}

// Hits reports whether digest's bit is set: whether it may be on the list
// (nil or shorter digests never are).
func (s *SuppressionSummary) Hits(digest []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits(digest)
}

func (s *SuppressionSummary) hits(d []byte) bool {
	if len(d) < 3 {
		return false
	}
	i := uint32(d[0])<<16 | uint32(d[1])<<8 | uint32(d[2])
	return s.bits[i/8]&(0x80>>(i%8)) != 0
}

// probeFilter refreshes the summary s in db (the claim's transaction) and
// returns, for n claims, whether the claim statement must probe each:
// its digest (digest(i)) or one of its previous digests (previous(i), for
// the re-keying of a secret rotation) hits the summary. A nil summary
// returns nil: the statement probes every claim.
func (s *SuppressionSummary) probeFilter(ctx context.Context, db sqlx.QueryerContext, n int, digest func(i int) []byte, previous func(i int) [][]byte) ([]bool, error) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.read(ctx, db, noticeSuppressionSummaryRead); err != nil {
		return nil, err
	}
	out := make([]bool, n)
	for i := range out {
		out[i] = s.hits(digest(i))
		if previous != nil {
			for _, p := range previous(i) {
				out[i] = out[i] || s.hits(p)
			}
		}
	}
	return out, nil
}
