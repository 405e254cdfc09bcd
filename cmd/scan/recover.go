package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

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

// recoverFlags are scan recover's flags.
type recoverFlags struct {
	since                   *cli.TimeFlag
	events, format, askName string
	noneLost                bool
	reason, by              string
}

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
	f := recoverFlags{since: cli.NewTimeFlag("")}
	fs.Var(f.since, "since", "the restore point, or the last pass the ledger knows of: an RFC 3339 instant or a duration back (2d)")
	fs.StringVar(&f.events, "events", "", "the provider's record of what went out, in --format; - for stdin")
	fs.StringVar(&f.format, "format", reconcile.FormatJSONL, reconcile.FormatJSONL+", or the payloads "+cli.OrList(provider.Strings(provider.Email...))+" post")
	fs.StringVar(&f.askName, "ask", "", "list what the provider accepted since --since through its API")
	fs.BoolVar(&f.noneLost, "none-lost", false, "acknowledge that nothing can have been lost (no record exists)")
	fs.StringVar(&f.reason, "reason", "", "why (recorded with the acknowledgement)")
	fs.StringVar(&f.by, "by", "", "who (recorded with the acknowledgement; default $USER)")
	return func(ctx context.Context, e *env, _ []string) error { return cmdRecover(ctx, e, f) }
}

func cmdRecover(ctx context.Context, e *env, f recoverFlags) error {
	since, err := f.validate(e)
	if err != nil {
		return err
	}
	var provider ask.Provider
	if f.askName != "" {
		if provider, err = newAskProvider(e, f.askName); err != nil {
			return err
		}
	}
	in, closeIn, err := openEvents(e, f.events)
	if err != nil {
		return err
	}
	defer closeIn()
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	return runRecover(ctx, e, db, f, since, in, provider)
}

// validate checks the flags without I/O and returns --since.
func (f *recoverFlags) validate(e *env) (time.Time, error) {
	if f.by == "" {
		f.by = e.getenv("USER")
	}
	if f.noneLost {
		if f.events != "" || f.askName != "" {
			return time.Time{}, usagef("--none-lost", "takes no --events or --ask: it records that nothing was lost")
		}
		if strings.TrimSpace(f.reason) == "" {
			return time.Time{}, usagef("--reason", "required with --none-lost")
		}
		if strings.TrimSpace(f.by) == "" {
			return time.Time{}, usagef("--by", "required with --none-lost when $USER is not set")
		}
	}
	var since time.Time
	if f.since.Given() {
		since = f.since.Instant(e.clockNow().UTC())
	}
	if f.noneLost {
		return since, nil
	}
	switch {
	case !f.since.Given():
		return time.Time{}, usagef("--since", "required: the restore point, or the last pass the ledger knows of")
	case (f.events == "") == (f.askName == ""):
		return time.Time{}, usagef("--events", "give the provider's record with --events FILE|- or --ask PROVIDER (one of them)")
	case !slices.Contains(reconcile.Formats, f.format):
		return time.Time{}, usagef("--format", "%q is not one of %s", f.format, strings.Join(reconcile.Formats, ", "))
	}
	if f.by == "" {
		f.by = "recover"
	}
	return since, nil
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
func runRecover(ctx context.Context, e *env, db *sqlx.DB, f recoverFlags, since time.Time, in io.Reader, p ask.Provider) error {
	rep, err := reconcile.Recover(ctx, db, reconcile.Recovery{Since: since, NoneLost: f.noneLost, Reason: f.reason, By: f.by,
		RunID: newRunID(e.clockNow().UTC()), Now: e.clockNow,
		Read: func(add func(ledger.Settlement) error) error {
			if p != nil {
				return p.Since(ctx, since, add)
			}
			st, err := reconcile.ReadClassified(in, f.format, add)
			for _, pr := range st.Problems {
				fmt.Fprintf(e.stderr, "scan recover: line %d skipped: %s\n", pr.Line, pr.Reason)
			}
			return err
		}})
	if err != nil {
		return err
	}
	if rep.NoEpoch != nil {
		fmt.Fprintf(e.stderr, "scan recover: no epoch recorded: %s\n", e.redact(rep.NoEpoch.Error()))
	}
	return json.NewEncoder(e.stdout).Encode(rep)
}
