package main

import (
	"context"
	"encoding/json"
	"os"

	"scan/internal/cli"
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
	var r suppress.Entry
	fs.StringVar(&r.Email, "email", "", "an email address (case does not matter)")
	fs.StringVar(&r.Phone, "phone", "", "a phone number in E.164 (+14155550100)")
	fs.StringVar(&r.Reason, "reason", "", "why (required; recorded with the entry, never the address)")
	return func(ctx context.Context, e *env, _ []string) error { return suppressOne(ctx, e, verb, r) }
}

// suppressOne adds or removes one address.
func suppressOne(ctx context.Context, e *env, verb string, r suppress.Entry) error {
	channel, norm, err := r.Validate()
	if err != nil {
		return err
	}
	k, err := suppress.ParseKeys(e.getenv(notice.SecretVar), e.getenv(notice.PreviousSecretsVar))
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	out, err := suppress.Change(ctx, db, k, verb == "remove", channel, norm, r.Reason, e.clockNow().UTC())
	if err != nil {
		return err
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

// suppressList prints the entries without addresses (suppress.List).
// With NOTICE_KEY_SECRET set, each says which secret keys it ("key":
// current, previous (one of NOTICE_KEY_SECRET_PREVIOUS), other or
// unknown); --previous prints only those still keyed under a previous
// secret. The counts per channel and per key go to stderr.
func suppressList(ctx context.Context, e *env, limit *int, onlyPrev *bool, out *cli.Output) error {
	format, err := outputFormat(e, out)
	if err != nil {
		return err
	}
	if *limit < 1 {
		return usagef("--limit", "must be at least 1")
	}
	label, prevIDs, err := suppress.ParseLabels(e.getenv(notice.SecretVar), e.getenv(notice.PreviousSecretsVar), *onlyPrev)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	l, err := suppress.List(ctx, db, *limit, label, prevIDs, *onlyPrev)
	if err != nil {
		return err
	}
	if err := l.Print(e.stdout, format); err != nil {
		return err
	}
	total, byKey, err := suppress.Counts(ctx, db, label)
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stderr).Encode(map[string]any{"total": total, "by_key": byKey})
}

// suppressImportFlags declares scan suppress import's flags.
func suppressImportFlags(fs *pflag.FlagSet) runFunc {
	var r suppress.ImportRequest
	fs.StringVar(&r.From, "from", "", "a provider's suppression export, CSV with a header (SendGrid, Mailgun, Postmark, or any with an email/address/phone column)")
	fs.StringVar(&r.Channel, "channel", "", "the channel the list is for: email or sms")
	fs.StringVar(&r.Reason, "reason", "", "the reason for rows whose export gives none (default: imported from FILE)")
	return func(ctx context.Context, e *env, _ []string) error { return suppressImport(ctx, e, r) }
}

// suppressImport reads a provider's suppression export.
func suppressImport(ctx context.Context, e *env, r suppress.ImportRequest) error {
	if err := r.Validate(); err != nil {
		return err
	}
	k, err := suppress.ParseKeys(e.getenv(notice.SecretVar), e.getenv(notice.PreviousSecretsVar))
	if err != nil {
		return err
	}
	f, err := os.Open(r.From)
	if err != nil {
		return usagef("--from", "%v", err)
	}
	defer f.Close()
	res, err := suppress.Read(f, r.Channel, r.Reason, k.Current)
	if err != nil {
		return usagef("--from", "%s: %v; nothing was written", r.From, err)
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	added, err := suppress.Import(ctx, db, res.Entries, e.clockNow().UTC())
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(map[string]any{"rows": res.Rows, "addresses": len(res.Entries),
		"added": added, "already_listed": len(res.Entries) - added, "invalid_lines": res.Invalid})
}
