// Package backfill reads the notices an earlier system already sent (a CSV
// of subscription_id,period_start,kind,revision,sent_at) so they can enter
// the ledger as sent before the first enforced pass. A file is validated
// whole before anything is written: one bad line rejects the file, named
// by its line number. Notices derives each notice's key and Message-ID as
// a pass would have; Import writes them as sent in one transaction.
package backfill

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// Header is the expected first line (optional in the file).
var Header = []string{"subscription_id", "period_start", "kind", "revision", "sent_at"}

// MaxRows bounds one file; split larger imports.
const MaxRows = 5_000_000

// Record is one line of the file.
type Record struct {
	Line int
	notice.Tuple
	SentAt time.Time
}

// LineError is a line that failed validation.
type LineError struct {
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Read parses and validates every line of r and returns one record per
// notice: a legacy sender that sent a notice twice wrote its tuple on two
// lines, and the notice enters the ledger once, as first sent (the
// earliest sent_at, at its line). It returns a *LineError for the first
// bad line; then nothing should be written.
func Read(r io.Reader) ([]Record, error) {
	recs, err := ReadSends(r)
	if err != nil {
		return nil, err
	}
	return Unique(recs), nil
}

// Unique returns one record per notice of recs, in the order of their
// first lines, each with the earliest sent_at of its notice's records.
func Unique(recs []Record) []Record {
	out := recs[:0:0]
	at := map[string]int{} // tuple -> index in out
	for _, x := range recs {
		t := x.tupleString()
		if i, dup := at[t]; dup {
			if x.SentAt.Before(out[i].SentAt) {
				out[i].SentAt = x.SentAt
			}
			continue
		}
		at[t] = len(out)
		out = append(out, x)
	}
	return out
}

// tupleString is the record's business tuple as one string (id, period,
// kind, revision): equal for two sends of the same notice, whatever the
// location of their parsed period_start.
func (x Record) tupleString() string {
	return x.SubscriptionID + "|" + x.PeriodStart.Format(notice.DateLayout) + "|" + x.Kind + "|" + strconv.Itoa(x.Revision)
}

// ReadSends parses and validates every line of r and returns every send
// it records, a notice sent twice on two records (what `scan shadow
// report` counts). It returns a *LineError for the first bad line.
func ReadSends(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var out []Record
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			// FieldPos is only defined for a record Read returned.
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &LineError{pe.StartLine, pe.Err.Error()} // where the bad record starts
			}
			return nil, fmt.Errorf("read backfill: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if line == 1 {
			// A spreadsheet's export may start with a byte order mark.
			rec[0] = strings.TrimPrefix(rec[0], "\uFEFF")
			if strings.EqualFold(strings.TrimSpace(rec[0]), Header[0]) {
				continue
			}
		}
		if len(rec) != len(Header) {
			return nil, &LineError{line, fmt.Sprintf("want %d fields (%s), got %d", len(Header), strings.Join(Header, ","), len(rec))}
		}
		if len(out) >= MaxRows {
			return nil, &LineError{line, fmt.Sprintf("more than %d rows; split the file", MaxRows)}
		}
		x := Record{Line: line, Tuple: notice.Tuple{SubscriptionID: strings.TrimSpace(rec[0]), Kind: strings.TrimSpace(rec[2])}}
		if x.SubscriptionID == "" || len(x.SubscriptionID) > notice.MaxSubscriptionIDLen {
			return nil, &LineError{line, "subscription_id must be 1 to 255 bytes"}
		}
		if x.PeriodStart, err = time.Parse(notice.DateLayout, strings.TrimSpace(rec[1])); err != nil {
			return nil, &LineError{line, fmt.Sprintf("period_start %q is not YYYY-MM-DD", rec[1])}
		}
		if err := notice.ValidateKind(x.Kind); err != nil {
			return nil, &LineError{line, "kind: " + err.Error()}
		}
		rv := strings.TrimSpace(rec[3])
		if rv == "" {
			rv = "0"
		}
		if x.Revision, err = strconv.Atoi(rv); err != nil || x.Revision < 0 {
			return nil, &LineError{line, fmt.Sprintf("revision %q is not a whole number >= 0", rec[3])}
		}
		if x.SentAt, err = time.Parse(time.RFC3339, strings.TrimSpace(rec[4])); err != nil {
			return nil, &LineError{line, fmt.Sprintf("sent_at %q is not RFC3339 (2026-10-01T09:00:00Z)", rec[4])}
		}
		out = append(out, x)
	}
}

// LegacySends is ReadSends as ledger.ShadowCompare takes them: the
// legacy sender's sends that `scan shadow report` sets against the
// shadow passes.
func LegacySends(r io.Reader) ([]ledger.LegacySend, error) {
	recs, err := ReadSends(r)
	if err != nil {
		return nil, err
	}
	sends := make([]ledger.LegacySend, len(recs))
	for i, rec := range recs {
		sends[i] = ledger.LegacySend{Tuple: rec.Tuple, SentAt: rec.SentAt}
	}
	return sends, nil
}
