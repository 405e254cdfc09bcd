package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"time"

	"scan/internal/cli"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/suppress"

	"github.com/spf13/pflag"
)

// suppressCommand is `scan suppress add|remove|list|import`: the
// suppression list, which keeps digests (notice.AddressHasher, keyed from
// NOTICE_KEY_SECRET) and never an address; nothing it prints holds one.
var suppressCommand = command{use: "suppress", short: "the suppression list: add, remove, list, import; keeps and prints no address",
	subs: []*command{&suppressAddCommand, &suppressRemoveCommand, &suppressListCommand, &suppressImportCommand}}

var envSuppress = []string{"DATABASE_URL", "NOTICE_KEY_SECRET", "NOTICE_KEY_SECRET_PREVIOUS"}

var (
	suppressAddCommand = command{use: "add", short: "put one address on the list (--email ADDR|--phone NUMBER --reason TEXT)",
		env: envSuppress, flags: func(fs *pflag.FlagSet) runFunc { return suppressOneFlags(fs, "add") }}
	suppressRemoveCommand = command{use: "remove", short: "take one address off the list (--email ADDR|--phone NUMBER --reason TEXT)",
		env: envSuppress, flags: func(fs *pflag.FlagSet) runFunc { return suppressOneFlags(fs, "remove") }}
	suppressListCommand = command{use: "list", short: "the entries, without addresses (--limit N, -o json|csv|table); counts per channel on stderr",
		env: []string{"DATABASE_URL"}, flags: suppressListFlags}
	suppressImportCommand = command{use: "import", short: "read a provider's suppression export (--from FILE.csv --channel email|sms)",
		env: envSuppress, flags: suppressImportFlags}
)

// suppressOneFlags declares the flags of scan suppress add and remove.
func suppressOneFlags(fs *pflag.FlagSet, verb string) runFunc {
	email := fs.String("email", "", "an email address (case does not matter)")
	phone := fs.String("phone", "", "a phone number in E.164 (+14155550100)")
	reason := fs.String("reason", "", "why (required; recorded with the entry, never the address)")
	return func(ctx context.Context, e *env, _ []string) error {
		return suppressOne(ctx, e, verb, *email, *phone, *reason)
	}
}

// suppressOne adds or removes one address.
func suppressOne(ctx context.Context, e *env, verb, emailArg, phoneArg, reasonArg string) error {
	email, phone, reason := &emailArg, &phoneArg, &reasonArg
	channel, raw := notice.ChannelEmail, *email
	switch {
	case (*email == "") == (*phone == ""):
		return usagef("--email", "give exactly one of --email ADDR or --phone NUMBER")
	case *phone != "":
		channel, raw = notice.ChannelSMS, *phone
	}
	norm, ok := suppress.Normalize(channel, raw)
	if !ok {
		field := map[string]string{notice.ChannelEmail: "--email", notice.ChannelSMS: "--phone"}[channel]
		return usagef(field, "not a usable %s address (a phone number must be E.164, e.g. +14155550100)", channel)
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("--reason", "required: say why; it is recorded")
	}
	h, prev, err := addressHashers(e)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	d := h.Digest(channel, norm)
	var pd [][]byte // the address's digests under the previous secrets
	for _, p := range prev {
		pd = append(pd, p.Digest(channel, norm))
	}
	out := map[string]any{"channel": channel, "digest": digestPrefix(d)}
	if verb == "remove" {
		// Every entry of the address goes, whichever secret keyed it.
		removed, err := ledger.SuppressionRemove(ctx, db, channel, append([][]byte{d}, pd...))
		if err != nil {
			return err
		}
		out["removed"] = removed
	} else {
		// An entry under a previous secret is re-keyed, keeping its
		// reason, source and time; else the address is added.
		hit, err := ledger.SuppressionMatchRekey(ctx, db, channel, [][]byte{d}, [][][]byte{pd}, h.KeyID())
		if err != nil {
			return err
		}
		n, err := ledger.SuppressionAdd(ctx, db, e.clockNow().UTC(), []ledger.Suppression{{Channel: channel, Digest: d, Reason: *reason,
			Source: ledger.SuppressedByOperator, KeyID: h.KeyID()}})
		if err != nil {
			return err
		}
		out["added"] = n == 1
		out["already_listed"] = n == 0 && hit[0]
	}
	return json.NewEncoder(e.stdout).Encode(out)
}

// suppressListFlags declares scan suppress list's flags.
func suppressListFlags(fs *pflag.FlagSet) runFunc {
	limit := fs.Int("limit", 1000, "print at most N entries, oldest first (the counts per channel go to stderr)")
	onlyPrev := fs.Bool("previous", false, "only the entries still keyed under a secret of NOTICE_KEY_SECRET_PREVIOUS")
	out := cli.OutputFlag(fs, false)
	return func(ctx context.Context, e *env, _ []string) error { return suppressList(ctx, e, limit, onlyPrev, out) }
}

// suppressList prints the entries without addresses: the digest's first
// 12 hex characters tell entries apart. With NOTICE_KEY_SECRET set, each
// says which secret keys it ("key": current, previous (one of
// NOTICE_KEY_SECRET_PREVIOUS), other or unknown); --previous prints only
// those still keyed under a previous secret, the ones a rotation has not
// yet re-keyed.
func suppressList(ctx context.Context, e *env, limit *int, onlyPrev *bool, out *cli.Output) error {
	format, err := outputFormat(e, out)
	if err != nil {
		return err
	}
	if *limit < 1 {
		return usagef("--limit", "must be at least 1")
	}
	label, prevIDs, err := keyLabels(e, *onlyPrev)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	var list []ledger.Suppressed
	if !*onlyPrev || len(prevIDs) > 0 {
		if list, err = ledger.SuppressionList(ctx, db, *limit, prevIDs...); err != nil {
			return err
		}
	}
	l := &cli.Listing{Header: []string{"channel", "digest", "reason", "source", "notice_key", "created_at", "key"}, Empty: "the suppression list is empty"}
	for _, s := range list {
		key := label(s.KeyID)
		l.Records = append(l.Records, listedEntry{s, key})
		l.Cells = append(l.Cells, []string{s.Channel, s.Digest, s.Reason, s.Source, s.NoticeKey, s.CreatedAt.UTC().Format(time.RFC3339), key})
	}
	if err := l.Print(e.stdout, format); err != nil {
		return err
	}
	counts, err := ledger.SuppressionCountByKey(ctx, db)
	if err != nil {
		return err
	}
	total, byKey := map[string]int{}, map[string]int{}
	for _, c := range counts {
		total[c.Channel] += c.Count
		if l := label(c.KeyID); l != "" {
			byKey[l] += c.Count
		}
	}
	return json.NewEncoder(e.stderr).Encode(map[string]any{"total": total, "by_key": byKey})
}

// listedEntry is an entry as `scan suppress list` prints it.
type listedEntry struct {
	ledger.Suppressed
	Key string `json:"key,omitempty"`
}

// keyLabels returns the function that names the secret a key id is of
// (current, previous, other, unknown; "" without NOTICE_KEY_SECRET), and
// the previous secrets' ids (hex). --previous needs the secrets.
func keyLabels(e *env, need bool) (func(string) string, []string, error) {
	if e.getenv("NOTICE_KEY_SECRET") == "" && !need {
		return func(string) string { return "" }, nil, nil
	}
	h, prev, err := addressHashers(e)
	if err != nil {
		return nil, nil, err
	}
	cur := hex.EncodeToString(h.KeyID())
	ids := []string{}
	for _, p := range prev {
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
	}, ids, nil
}

// suppressImportFlags declares scan suppress import's flags.
func suppressImportFlags(fs *pflag.FlagSet) runFunc {
	from := fs.String("from", "", "a provider's suppression export, CSV with a header (SendGrid, Mailgun, Postmark, or any with an email/address/phone column)")
	channel := fs.String("channel", "", "the channel the list is for: email or sms")
	reason := fs.String("reason", "", "the reason for rows whose export gives none (default: imported from FILE)")
	return func(ctx context.Context, e *env, _ []string) error {
		return suppressImport(ctx, e, from, channel, reason)
	}
}

// suppressImport reads a provider's suppression export.
func suppressImport(ctx context.Context, e *env, from, channel, reason *string) error {
	if !notice.ValidChannel(*channel) {
		return usagef("--channel", "required: email or sms")
	}
	if *from == "" {
		return usagef("--from", "required: a CSV file")
	}
	h, err := addressHasher(e)
	if err != nil {
		return err
	}
	f, err := os.Open(*from)
	if err != nil {
		return usagef("--from", "%v", err)
	}
	defer f.Close()
	dflt := *reason
	if dflt == "" {
		dflt = "imported"
	}
	res, err := suppress.Read(f, *channel, dflt, h)
	if err != nil {
		return usagef("--from", "%s: %v; nothing was written", *from, err)
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	added := 0
	for start := 0; start < len(res.Entries); start += 1000 {
		n, err := ledger.SuppressionAdd(ctx, db, e.clockNow().UTC(), res.Entries[start:min(start+1000, len(res.Entries))])
		if err != nil {
			return err
		}
		added += n
	}
	return json.NewEncoder(e.stdout).Encode(map[string]any{"rows": res.Rows, "addresses": len(res.Entries),
		"added": added, "already_listed": len(res.Entries) - added, "invalid_lines": res.Invalid})
}

// addressHasher returns the suppression list's hasher from NOTICE_KEY_SECRET.
func addressHasher(e *env) (*notice.AddressHasher, error) {
	h, _, err := addressHashers(e)
	return h, err
}

// addressHashers returns the suppression list's hasher from
// NOTICE_KEY_SECRET and those from NOTICE_KEY_SECRET_PREVIOUS.
func addressHashers(e *env) (*notice.AddressHasher, []*notice.AddressHasher, error) {
	sec, err := secret(e)
	if err != nil {
		return nil, nil, err
	}
	prevs, err := previousSecrets(e, sec)
	if err != nil {
		return nil, nil, err
	}
	h, err := notice.NewAddressHasher(sec)
	if err != nil {
		return nil, nil, err
	}
	var out []*notice.AddressHasher
	for _, p := range prevs {
		ph, err := notice.NewAddressHasher(p)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, ph)
	}
	return h, out, nil
}

func digestPrefix(d []byte) string {
	const hexdigits = "0123456789abcdef"
	b := make([]byte, 0, 12)
	for _, c := range d[:6] {
		b = append(b, hexdigits[c>>4], hexdigits[c&15])
	}
	return string(b)
}
