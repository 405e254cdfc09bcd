package main

import (
	"context"
	"encoding/json"
	"time"

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

// proofArgs are scan proof's flags: a proof.Request, and the policy.
type proofArgs struct {
	req    proof.Request
	config string
}

// proofFlags declares scan proof's flags.
func proofFlags(fs *pflag.FlagSet) runFunc {
	var a proofArgs
	fs.StringVar(&a.req.Subscription, "subscription", "", "the subscription whose notices to prove")
	fs.StringVar(&a.req.Kind, "kind", "", "only notices of this kind")
	fs.StringVar(&a.req.PeriodStart, "period-start", "", "only notices of this billing period (YYYY-MM-DD)")
	fs.StringVar(&a.req.Channel, "channel", "", "only notices of this channel: email or sms")
	fs.StringVar(&a.req.Out, "out", "", "directory to write <key prefix>.eml|.txt, .json and .pdf into")
	fs.BoolVar(&a.req.Verify, "verify", false, "rebuild kept messages and count those that do not match their digest")
	fs.IntVar(&a.req.Sample, "sample", 0, "with --verify: check this many notices chosen at random (0: every one)")
	fs.StringVar(&a.config, "config", "", "policy file (env SCAN_CONFIG), for the legal lead times; built-in defaults when empty")
	return func(ctx context.Context, e *env, _ []string) error { return cmdProof(ctx, e, fs, &a) }
}

func cmdProof(ctx context.Context, e *env, fs *pflag.FlagSet, a *proofArgs) error {
	f, err := a.req.Validate()
	if err != nil {
		return err
	}
	if a.req.Verify {
		return proofVerify(ctx, e, a.req.Sample, f.PeriodStart)
	}
	pol, err := loadPolicy(e, fs, a.config)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	written, err := proof.Write(ctx, db, pol, f, a.req.Out, e.clockNow())
	if written == nil {
		written = []proof.Written{}
	}
	if encErr := json.NewEncoder(e.stdout).Encode(map[string]any{"written": written}); encErr != nil && err == nil {
		err = encErr
	}
	return err
}

// proofVerify checks the kept messages of a sample (proof.Verify),
// prints the counts and pushes them with PUSHGATEWAY_URL
// (proof.PushVerify): exit 1 on any mismatch or a failed push.
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
	res, err := proof.Verify(ctx, db, n, from)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(e.stdout).Encode(res); err != nil {
		return err
	}
	return proof.PushVerify(ctx, gw, res, e.clockNow())
}
