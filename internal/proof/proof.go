// Package proof owns proof of notice (issue 37): for a subscription's
// notices, the exact message each handed to the provider, rebuilt from
// what the ledger keeps (ledger.MessageOf) and verified against the
// SHA-256 digest recorded at send time, written as the message itself
// (.eml for email, .txt for sms), a JSON record of what the ledger knows
// about the notice, and a one- or two-page PDF for a card network's
// dispute or a regulator. It reads the ledger and writes nothing to it.
//
// Nothing it writes carries the recipient's address except the message
// itself: the JSON and the PDF show it masked (j***@example.com).
package proof

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
)

// ErrNoMatch: no notice of the subscription matches the filter with a
// message handed over.
var ErrNoMatch = errors.New("no notice matches")

// Filter selects a subscription's notices. Zero fields match everything.
type Filter struct {
	SubscriptionID string // required
	Kind           string
	Channel        string // email or sms
	PeriodStart    time.Time
}

func (f Filter) match(r ledger.Row) bool {
	return (f.Kind == "" || r.Kind == f.Kind) &&
		(f.Channel == "" || r.Channel == f.Channel) &&
		(f.PeriodStart.IsZero() || r.Period() == f.PeriodStart.Format(time.DateOnly))
}

// Written is one notice whose proof was written.
type Written struct {
	Key   string   `json:"key_prefix"`
	Files []string `json:"files"`
}

// RefusedError names the notices whose kept message did not verify (a
// *ledger.DigestError each) or could not be read; nothing was written for
// them.
type RefusedError struct {
	Refused []error
}

func (e *RefusedError) Error() string {
	s := fmt.Sprintf("%d notice(s) refused, no file written for them:", len(e.Refused))
	for _, err := range e.Refused {
		s += " " + err.Error() + ";"
	}
	return s
}

// Write writes, into dir (created if missing), the proof of every notice
// of f that handed a message over: <key prefix>.eml or .txt, .json and
// .pdf. pol (nil allowed) gives the legal lead time of the notice's
// jurisdiction; now is the time printed as when the proof was made. It
// returns ErrNoMatch when no notice matches (and writes nothing), and a
// *RefusedError naming the notices whose message did not verify, after
// writing the others.
func Write(ctx context.Context, db sqlx.QueryerContext, pol *policy.Policy, f Filter, dir string, now time.Time) ([]Written, error) {
	rows, err := ledger.BySubscription(ctx, db, f.SubscriptionID)
	if err != nil {
		return nil, err
	}
	var match []ledger.Row
	keys := []string{}
	for _, r := range rows {
		if f.match(r) && len(r.MessageSHA256) > 0 {
			match = append(match, r)
			keys = append(keys, r.NoticeKey)
		}
	}
	if len(match) == 0 {
		return nil, fmt.Errorf("%w: subscription %s has %d ledger row(s), none of them matching with a message handed over", ErrNoMatch, f.SubscriptionID, len(rows))
	}
	ev, err := ledger.EvidenceOf(ctx, db, keys)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("proof: --out: %w", err)
	}
	var written []Written
	var refused []error
	for _, r := range match {
		msg, earlier, err := messagesOf(ctx, db, r)
		if err != nil {
			refused = append(refused, fmt.Errorf("notice %s: %w", notice.Short(r.NoticeKey), err))
			continue
		}
		rec := newRecord(r, ev[r.NoticeKey], msg, earlier, pol, now)
		files, err := writeNotice(dir, rec, msg)
		if err != nil {
			return written, err
		}
		written = append(written, Written{Key: rec.KeyPrefix, Files: files})
	}
	if len(refused) > 0 {
		return written, &RefusedError{Refused: refused}
	}
	return written, nil
}

// writeNotice writes one notice's three files, each whole or not at all
// (written to a temporary name, then renamed).
func writeNotice(dir string, rec Record, msg []byte) ([]string, error) {
	ext := ".eml"
	if rec.Channel == notice.ChannelSMS {
		ext = ".txt"
	}
	js, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	pdf, err := renderPDF(rec)
	if err != nil {
		return nil, fmt.Errorf("proof: pdf of %s: %w", rec.KeyPrefix, err)
	}
	var files []string
	for _, f := range []struct {
		ext  string
		data []byte
	}{{ext, msg}, {".json", append(js, '\n')}, {".pdf", pdf}} {
		name := filepath.Join(dir, rec.KeyPrefix+f.ext)
		if err := writeFile(name, f.data); err != nil {
			return files, err
		}
		files = append(files, name)
	}
	return files, nil
}

func writeFile(name string, data []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	return nil
}
