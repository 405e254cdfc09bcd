package proof

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/metrics"
	"scan/internal/notice"
	"scan/internal/observe"
	"scan/internal/usage"
)

// Request is what an operator asks of scan proof, as its flags give it:
// the proof of one subscription's notices into Out, or with Verify a
// check of Sample kept messages (0: every one).
type Request struct {
	Subscription, Kind, PeriodStart, Channel, Out string
	Verify                                        bool
	Sample                                        int
}

// UsageError is a request an operator must correct; Field names the
// flag. Nothing was read or written.
type UsageError = usage.Error

// Validate checks the flags and their combinations, and returns the
// notices they select.
func (r Request) Validate() (Filter, error) {
	var f Filter
	if r.PeriodStart != "" {
		t, err := time.Parse(time.DateOnly, r.PeriodStart)
		if err != nil {
			return f, usage.Errorf("--period-start", "%q is not a date (YYYY-MM-DD)", r.PeriodStart)
		}
		f.PeriodStart = t
	}
	if r.Verify {
		if r.Sample < 0 {
			return f, usage.Errorf("--sample", "must be 0 (every notice) or more")
		}
		return f, nil
	}
	switch {
	case r.Subscription == "":
		return f, usage.Errorf("--subscription", "required (or --verify)")
	case r.Out == "":
		return f, usage.Errorf("--out", "required: the directory to write the proof into")
	case r.Channel != "" && r.Channel != notice.ChannelEmail && r.Channel != notice.ChannelSMS:
		return f, usage.Errorf("--channel", "%q is not email or sms", r.Channel)
	}
	f.SubscriptionID, f.Kind, f.Channel = r.Subscription, r.Kind, r.Channel
	return f, nil
}

// ErrMismatch: a kept message does not match its digest.
var ErrMismatch = errors.New("proof verify")

// Verify rebuilds the kept messages of a sample of n (or every notice, of
// the period starting on from when it is set) and checks each against
// its digest (ledger.MessageSample).
func Verify(ctx context.Context, db sqlx.QueryerContext, n int, from time.Time) (ledger.MessageCheck, error) {
	var to time.Time
	if !from.IsZero() {
		to = from.AddDate(0, 0, 1)
	}
	return ledger.MessageSample(ctx, db, n, from, to)
}

// PushVerify pushes a completed check's counts to the Pushgateway gw
// (scan_proof_verify_notices, which ScanProofMismatch watches), unless gw
// is empty; then it returns ErrMismatch when a message did not match. A
// failed push is an error, so that the CronJob's alert never silently
// goes without its data.
func PushVerify(ctx context.Context, gw string, res ledger.MessageCheck, now time.Time) error {
	if gw != "" {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observe.PushTimeout)
		defer cancel()
		c := metrics.ProofVerifyCounts{Verified: res.Verified, Mismatched: len(res.Mismatched), Missing: res.Missing}
		if err := metrics.PushProofVerify(pctx, gw, nil, c, now); err != nil {
			return err
		}
	}
	if len(res.Mismatched) > 0 {
		return fmt.Errorf("%w: %d of %d kept message(s) do not match their digest: %v", ErrMismatch, len(res.Mismatched), res.Checked, res.Mismatched)
	}
	return nil
}
