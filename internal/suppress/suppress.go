// Package suppress reads a provider's suppression export (CSV) into the
// entries of scan's own suppression list: the address column found by
// its header, each address normalized (notice.NormalizeEmail,
// NormalizePhone) and digested (notice.AddressHasher), with the reason the
// export gives; and the operator's use cases of the list (list.go), which
// store the digests through package ledger. Nothing here keeps an address.
//
// The header names it knows, each from the provider's documentation
// (testdata holds a sample of each, citing the page):
//   - SendGrid: the suppression lists (bounces, blocks, spam reports,
//     invalid emails, unsubscribes) export with an "email" column and
//     "reason" (or "status") beside it;
//   - Mailgun: the bounce list's CSV has "address, code, error,
//     created_at" (the same columns its import takes);
//   - Postmark: suppressions have EmailAddress, SuppressionReason, Origin
//     and CreatedAt;
//   - Twilio (sms): a list of numbers under "phone_number" or "phone".
//
// Any other export works when its address column carries one of these
// names (see AddressColumns); the others are ignored.
package suppress

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// AddressColumns are the header names (compared case-insensitively, with
// spaces, '_' and '-' removed) taken as the address column, per channel,
// in order of preference.
var AddressColumns = map[string][]string{
	notice.ChannelEmail: {"email", "emailaddress", "address", "recipient", "to"},
	notice.ChannelSMS:   {"phonenumber", "phone", "number", "to"},
}

// ReasonColumns are the header names taken as the reason, in order of
// preference; none present: the caller's default reason.
var ReasonColumns = []string{"suppressionreason", "reason", "error", "type", "status"}

// MaxReason bounds a reason kept from an export, in bytes.
const MaxReason = 200

// ErrNoAddressColumn: the header names no address column for the channel.
var ErrNoAddressColumn = errors.New("no address column in the header")

// Result is what Read made of an export.
type Result struct {
	Entries []ledger.Suppression // one per distinct address
	Rows    int                  // data rows read
	Invalid []int                // line numbers of rows without a usable address
}

// Read parses a CSV export with a header row for channel and returns its
// entries, each with source ledger.SuppressedByImport and the row's
// reason (else defaultReason; "" is "imported"). A row whose address is not usable is
// listed in Invalid by line number (never by address) and skipped; a
// header without an address column is ErrNoAddressColumn.
func Read(r io.Reader, channel, defaultReason string, h *notice.AddressHasher) (Result, error) {
	if defaultReason == "" {
		defaultReason = "imported"
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		return Result{}, fmt.Errorf("header: %w", err)
	}
	addrCol, reasonCol := columns(head, channel)
	if addrCol < 0 {
		return Result{}, fmt.Errorf("%w (want one of %s)", ErrNoAddressColumn, strings.Join(AddressColumns[channel], ", "))
	}
	var res Result
	seen := map[string]bool{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return Result{}, err
		}
		res.Rows++
		line, _ := cr.FieldPos(0)
		norm, ok := normalize(channel, field(rec, addrCol))
		if !ok {
			res.Invalid = append(res.Invalid, line)
			continue
		}
		if seen[norm] {
			continue
		}
		seen[norm] = true
		reason := strings.TrimSpace(field(rec, reasonCol))
		if reason == "" {
			reason = defaultReason
		}
		if len(reason) > MaxReason {
			reason = reason[:MaxReason]
		}
		res.Entries = append(res.Entries, ledger.Suppression{Channel: channel, Digest: h.Digest(channel, norm), Reason: reason, Source: ledger.SuppressedByImport, KeyID: h.KeyID()})
	}
}

// normalize returns the form of an address the list digests for channel,
// or false when it is not usable there.
func normalize(channel, s string) (string, bool) {
	var n string
	var err error
	if channel == notice.ChannelSMS {
		n, err = notice.NormalizePhone(s)
	} else {
		n, err = notice.NormalizeEmail(s)
	}
	return n, err == nil
}

func columns(head []string, channel string) (addr, reason int) {
	idx := map[string]int{}
	for i, h := range head {
		k := strings.NewReplacer(" ", "", "_", "", "-", "").Replace(strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))))
		if _, dup := idx[k]; !dup {
			idx[k] = i
		}
	}
	addr, reason = -1, -1
	for _, c := range AddressColumns[channel] {
		if i, ok := idx[c]; ok {
			addr = i
			break
		}
	}
	for _, c := range ReasonColumns {
		if i, ok := idx[c]; ok {
			reason = i
			break
		}
	}
	return addr, reason
}

func field(rec []string, i int) string {
	if i < 0 || i >= len(rec) {
		return ""
	}
	return rec[i]
}
