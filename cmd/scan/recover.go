package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/jmoiron/sqlx"
	"github.com/spf13/pflag"

	"scan/internal/ask"
	"scan/internal/cli"
	"scan/internal/ledger"
	"scan/internal/provider"
	"scan/internal/reconcile"
)

// testAskProviders are providers that only tests register (in init),
// consulted by newAskProvider before the real ones: the seam `scan
// recover --ask` and `scan reconcile --ask` are exercised through without
// a provider's API. Written only at initialisation; read-only after.
var testAskProviders = map[string]func(e *env) (ask.Provider, error){}

// cmdRecover: after the ledger's database was restored or failed over,
// records what the provider's record says went out since --since (from
// --events in any --format, or from --ask PROVIDER's API), so that no pass
// sends it again, then records an acknowledged epoch, which lifts the
// passes' refusal (exit 4). --none-lost records the acknowledgement alone,
// with who and why, where no record exists.
var recoverCommand = command{use: "recover", short: "after a restore or failover (exit 4): record the provider's record since T, or --none-lost",
	long: "--since T (--events FILE|- [--format F] | --ask PROVIDER)  |  --none-lost --reason TEXT --by NAME\n--format names the events' format (the input).",
	env:  append([]string{"DATABASE_URL", "USER"}, envAsk...), flags: recoverFlagsOf}

// recoverFlagsOf declares scan recover's flags.
func recoverFlagsOf(fs *pflag.FlagSet) runFunc {
	var r reconcile.Recovery
	since := cli.NewTimeFlag("")
	fs.Var(since, "since", "the restore point, or the last pass the ledger knows of: an RFC 3339 instant or a duration back (2d)")
	fs.StringVar(&r.Events, "events", "", "the provider's record of what went out, in --format; - for stdin")
	fs.StringVar(&r.Format, "format", reconcile.FormatJSONL, reconcile.FormatJSONL+", or the payloads "+cli.OrList(provider.Strings(provider.Email...))+" post")
	fs.StringVar(&r.Ask, "ask", "", "list what the provider accepted since --since through its API")
	fs.BoolVar(&r.NoneLost, "none-lost", false, "acknowledge that nothing can have been lost (no record exists)")
	fs.StringVar(&r.Reason, "reason", "", "why (recorded with the acknowledgement)")
	fs.StringVar(&r.By, "by", "", "who (recorded with the acknowledgement; default $USER)")
	return func(ctx context.Context, e *env, _ []string) error { return cmdRecover(ctx, e, r, since) }
}

func cmdRecover(ctx context.Context, e *env, r reconcile.Recovery, since *cli.TimeFlag) error {
	r.By, r.RunID, r.Now = cmp.Or(r.By, e.getenv("USER")), newRunID(e.clockNow().UTC()), e.clockNow
	if since.Given() {
		r.Since = since.Instant(e.clockNow().UTC())
	}
	if err := r.Validate(); err != nil {
		return err
	}
	var p ask.Provider
	var err error
	if r.Ask != "" {
		if p, err = newAskProvider(e, r.Ask); err != nil {
			return err
		}
	}
	in, closeIn, err := openEvents(e, r.Events)
	if err != nil {
		return err
	}
	defer closeIn()
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	return runRecover(ctx, e, db, r, in, p)
}

// openEvents opens --events, a file or stdin for "-" (nil for "").
func openEvents(e *env, events string) (io.Reader, func(), error) {
	switch events {
	case "":
		return nil, func() {}, nil
	case "-":
		return e.stdin, func() {}, nil
	}
	fh, err := os.Open(events)
	if err != nil {
		return nil, nil, usagef("--events", "%v", err)
	}
	return fh, func() { fh.Close() }, nil
}

// runRecover applies the record and acknowledges (reconcile.Recover),
// and prints the report.
func runRecover(ctx context.Context, e *env, db *sqlx.DB, r reconcile.Recovery, in io.Reader, p ask.Provider) error {
	r.Read = func(add func(ledger.Settlement) error) error {
		if p != nil {
			return p.Since(ctx, r.Since, add)
		}
		st, err := reconcile.ReadClassified(in, r.Format, add)
		for _, pr := range st.Problems {
			fmt.Fprintf(e.stderr, "scan recover: line %d skipped: %s\n", pr.Line, pr.Reason)
		}
		return err
	}
	rep, err := reconcile.Recover(ctx, db, r)
	if err != nil {
		return err
	}
	if rep.NoEpoch != nil {
		fmt.Fprintf(e.stderr, "scan recover: no epoch recorded: %s\n", e.redact(rep.NoEpoch.Error()))
	}
	return json.NewEncoder(e.stdout).Encode(rep)
}
