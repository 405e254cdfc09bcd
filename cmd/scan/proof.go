package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"scan/internal/ledger"
	"scan/internal/metrics"
	"scan/internal/notice"
	"scan/internal/observe"
	"scan/internal/proof"

	"github.com/spf13/pflag"
)

// proofCommand writes the proof of a subscription's notices
// (internal/proof), or with --verify rebuilds kept messages and counts
// those that do not match their digest. Either way it writes nothing to
// the ledger. Exit 1 when nothing matches or a message does not verify.
var proofCommand = command{use: "proof",
	short: "the exact message each notice of a subscription handed over, verified, with a JSON record and a PDF for a dispute (--subscription ID --out DIR); --verify [--sample N] checks kept messages",
	env:   []string{"DATABASE_URL", "SCAN_CONFIG", "PUSHGATEWAY_URL"}, flags: proofFlags}

// proofArgs are scan proof's flags.
type proofArgs struct {
	sub, kind, period, channel, out, config string
	verify                                  bool
	sample                                  int
}

// proofFlags declares scan proof's flags.
func proofFlags(fs *pflag.FlagSet) runFunc {
	var a proofArgs
	fs.StringVar(&a.sub, "subscription", "", "the subscription whose notices to prove")
	fs.StringVar(&a.kind, "kind", "", "only notices of this kind")
	fs.StringVar(&a.period, "period-start", "", "only notices of this billing period (YYYY-MM-DD)")
	fs.StringVar(&a.channel, "channel", "", "only notices of this channel: email or sms")
	fs.StringVar(&a.out, "out", "", "directory to write <key prefix>.eml|.txt, .json and .pdf into")
	fs.BoolVar(&a.verify, "verify", false, "rebuild kept messages and count those that do not match their digest")
	fs.IntVar(&a.sample, "sample", 0, "with --verify: check this many notices chosen at random (0: every one)")
	fs.StringVar(&a.config, "config", "", "policy file (env SCAN_CONFIG), for the legal lead times; built-in defaults when empty")
	return func(ctx context.Context, e *env, _ []string) error { return cmdProof(ctx, e, fs, &a) }
}

func cmdProof(ctx context.Context, e *env, fs *pflag.FlagSet, a *proofArgs) error {
	sub, kind, period, channel, out, verify, sample, config := &a.sub, &a.kind, &a.period, &a.channel, &a.out, &a.verify, &a.sample, &a.config
	var f proof.Filter
	if *period != "" {
		t, err := time.Parse(time.DateOnly, *period)
		if err != nil {
			return usagef("--period-start", "%q is not a date (YYYY-MM-DD)", *period)
		}
		f.PeriodStart = t
	}
	if *verify {
		if *sample < 0 {
			return usagef("--sample", "must be 0 (every notice) or more")
		}
		return proofVerify(ctx, e, *sample, f.PeriodStart)
	}
	switch {
	case *sub == "":
		return usagef("--subscription", "required (or --verify)")
	case *out == "":
		return usagef("--out", "required: the directory to write the proof into")
	case *channel != "" && *channel != notice.ChannelEmail && *channel != notice.ChannelSMS:
		return usagef("--channel", "%q is not email or sms", *channel)
	}
	f.SubscriptionID, f.Kind, f.Channel = *sub, *kind, *channel
	pol, err := loadPolicy(e, fs, *config)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	written, err := proof.Write(ctx, db, pol, f, *out, e.clockNow())
	if written == nil {
		written = []proof.Written{}
	}
	if encErr := json.NewEncoder(e.stdout).Encode(map[string]any{"written": written}); encErr != nil && err == nil {
		err = encErr
	}
	return err
}

// proofVerify rebuilds the kept messages of a sample (or every notice, of
// one period when from is set) and prints the counts: exit 1 on any
// mismatch. With PUSHGATEWAY_URL a completed check pushes its counts
// (scan_proof_verify_notices, which ScanProofMismatch watches); a failed
// push is reported on stderr and fails the run, so that the CronJob's
// alert never silently goes without its data.
func proofVerify(ctx context.Context, e *env, n int, from time.Time) error {
	gw := e.getenv("PUSHGATEWAY_URL")
	if err := checkPushURL(gw); err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	var to time.Time
	if !from.IsZero() {
		to = from.AddDate(0, 0, 1)
	}
	res, err := ledger.MessageSample(ctx, db, n, from, to)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(e.stdout).Encode(res); err != nil {
		return err
	}
	if gw != "" {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observe.PushTimeout)
		defer cancel()
		c := metrics.ProofVerifyCounts{Verified: res.Verified, Mismatched: len(res.Mismatched), Missing: res.Missing}
		if err := metrics.PushProofVerify(pctx, gw, nil, c, e.clockNow()); err != nil {
			return err
		}
	}
	if len(res.Mismatched) > 0 {
		return fmt.Errorf("%w: %d of %d kept message(s) do not match their digest: %v", errMismatch, len(res.Mismatched), res.Checked, res.Mismatched)
	}
	return nil
}

var errMismatch = errors.New("proof verify")
