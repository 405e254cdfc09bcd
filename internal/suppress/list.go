package suppress

import (
	"context"
	"encoding/hex"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// The operator's use cases of the suppression list (scan suppress add,
// remove, list, import): each keeps and returns digests, never an
// address, and stores them through package ledger.

// Keys are the list's hashers: the current secret's (NOTICE_KEY_SECRET)
// and those of a rotation's previous secrets (NOTICE_KEY_SECRET_PREVIOUS).
type Keys struct {
	Current  *notice.AddressHasher
	Previous []*notice.AddressHasher
}

// NewKeys builds the hashers of current and previous.
func NewKeys(current []byte, previous [][]byte) (Keys, error) {
	h, err := notice.NewAddressHasher(current)
	if err != nil {
		return Keys{}, err
	}
	k := Keys{Current: h}
	for _, p := range previous {
		ph, err := notice.NewAddressHasher(p)
		if err != nil {
			return Keys{}, err
		}
		k.Previous = append(k.Previous, ph)
	}
	return k, nil
}

// Digests returns a normalized address's digest of channel under the
// current secret and, with previous, under each previous secret (nil
// without one). Not safe for concurrent use, as the hashers are not.
func (k Keys) Digests(channel, normalized string, previous bool) ([]byte, [][]byte) {
	var pd [][]byte
	for _, p := range k.Previous {
		if previous {
			pd = append(pd, p.Digest(channel, normalized))
		}
	}
	return k.Current.Digest(channel, normalized), pd
}

// Change adds (remove false) or removes one normalized address of channel
// and returns what `scan suppress add|remove` prints: the channel, the
// digest's first 12 hex characters, and what changed. Removing takes
// every entry of the address, whichever secret keyed it; adding re-keys
// an entry under a previous secret (keeping its reason, source and time),
// else adds the address.
func Change(ctx context.Context, db sqlx.ExtContext, k Keys, remove bool, channel, normalized, reason string, now time.Time) (map[string]any, error) {
	d, pd := k.Digests(channel, normalized, true) // pd: under the previous secrets
	out := map[string]any{"channel": channel, "digest": DigestPrefix(d)}
	if remove {
		removed, err := ledger.SuppressionRemove(ctx, db, channel, append([][]byte{d}, pd...))
		if err != nil {
			return nil, err
		}
		out["removed"] = removed
		return out, nil
	}
	hit, err := ledger.SuppressionMatchRekey(ctx, db, channel, [][]byte{d}, [][][]byte{pd}, k.Current.KeyID())
	if err != nil {
		return nil, err
	}
	n, err := ledger.SuppressionAdd(ctx, db, now, []ledger.Suppression{{Channel: channel, Digest: d, Reason: reason,
		Source: ledger.SuppressedByOperator, KeyID: k.Current.KeyID()}})
	if err != nil {
		return nil, err
	}
	out["added"] = n == 1
	out["already_listed"] = n == 0 && hit[0]
	return out, nil
}

// Labels returns the function that names the secret a key id (hex) is of
// (current, previous, other, unknown for none), and the previous
// secrets' ids.
func (k Keys) Labels() (func(string) string, []string) {
	cur := hex.EncodeToString(k.Current.KeyID())
	ids := []string{}
	for _, p := range k.Previous {
		ids = append(ids, hex.EncodeToString(p.KeyID()))
	}
	return func(id string) string {
		switch {
		case id == "":
			return "unknown"
		case id == cur:
			return "current"
		case slices.Contains(ids, id):
			return "previous"
		}
		return "other"
	}, ids
}

// Counts are the list's entries per channel, and per label (as Labels
// names them; label "" is left out).
func Counts(ctx context.Context, db sqlx.QueryerContext, label func(string) string) (total, byKey map[string]int, err error) {
	counts, err := ledger.SuppressionCountByKey(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	total, byKey = map[string]int{}, map[string]int{}
	for _, c := range counts {
		total[c.Channel] += c.Count
		if l := label(c.KeyID); l != "" {
			byKey[l] += c.Count
		}
	}
	return total, byKey, nil
}

// importBatch is how many entries one statement of Import adds. Each
// statement also fires the list's summary trigger (sql/0042), which
// rewrites every summary chunk its entries fall in: a batch of 1,000
// touches about 950 of the 16,384 chunks, so a 1M-entry import in
// batches of 1,000 rewrote about 970k chunk rows (PostgreSQL CPU 1.65x
// the same import without the trigger, WAL 1.9x). Batches of 50,000
// touch about 15,600 chunks each, about 310k rewrites for 1M entries:
// PostgreSQL CPU 1.2x, WAL 1.34x the import in batches of 1,000 without
// the trigger (medians of 7 runs; batches of 10,000 and 20,000 were
// 1.4-1.5x; of 100,000 no better, and larger statements cost a little
// more PostgreSQL CPU even without the trigger). Larger batches also
// hold the chunks' row locks longer: a Settle adding a bounce meanwhile
// waits for the statement's commit. A batch's parameters are about 7 MB
// of text.
const importBatch = 50_000

// Import adds entries (an export Read made) in batches and returns how
// many were not listed before.
func Import(ctx context.Context, db sqlx.ExtContext, entries []ledger.Suppression, now time.Time) (int, error) {
	added := 0
	for start := 0; start < len(entries); start += importBatch {
		n, err := ledger.SuppressionAdd(ctx, db, now, entries[start:min(start+importBatch, len(entries))])
		if err != nil {
			return added, err
		}
		added += n
	}
	return added, nil
}

// DigestPrefix is a digest's first 12 hex characters: enough to tell
// entries apart, never enough to find an address.
func DigestPrefix(d []byte) string { return hex.EncodeToString(d[:6]) }
