package scan

import (
	"context"

	"github.com/jmoiron/sqlx"

	"scan/internal/notice"
	"scan/internal/subscription"
)

// Email after sms (issue 30): a kind with channels [sms, email] goes by
// sms first (the sms stage is its primary stage, as for [sms]) and by
// email when sms cannot reach the customer while its window is open: its
// sms notice is failed because the row has no usable number (recorded
// no_usable_address on the sms channel), the number is on the sms
// suppression list, the provider refused it for good (a bad number, an
// opt-out), or evidence reported it failed or undelivered.
//
// Those email notices go through the email stage's one pipeline: the
// producer reads them as streams of their own (afterSMS), page by page in
// one set-based statement (subscription.ListAfterSMS), and claims,
// dispatches (per-domain buckets) and records them as every email notice,
// with its key unchanged and the claim committed before the mail leaves.
// The statement reads only rows whose sms notice is failed and that have
// no email notice: a notice texted (sent), in quarantine (claimed), in
// retry or missed on sms is never mailed.
//
// Timing: each such stream reads its window once from the start of the
// pass (the sms failures of earlier passes and evidence since), then
// waits for the sms stage's first sweep to end (Pass.sweptC) and reads it
// once more, so that what the sms stage failed in this pass (no number,
// suppressed, refused) is mailed in this pass too. What evidence fails
// later is mailed by the next pass ("in the next pass at the latest").

// handedStreams are the producer's streams of the kinds with channels
// [sms, email]: per kind its email retry rows, and per window group the
// rows whose sms notice failed (afterSMS; its earliest period is read
// with its first page, listStream).
func (p *Pass) handedStreams() []*stream {
	var out []*stream
	for _, group := range p.sels[notice.ChannelSMS] {
		if !p.kinds[group[0].Kind].EmailAfterSMS() {
			continue
		}
		out = append(out, &stream{sel: group[0], retry: true, skipped: map[string]bool{}})
		for _, sel := range group {
			out = append(out, &stream{sel: sel, afterSMS: true, swept: p.sweptC, skipped: map[string]bool{}})
		}
	}
	return out
}

// listStream reads a page of st's new notices: its window's open rows,
// or for an afterSMS stream the rows whose sms notice failed.
func (p *Pass) listStream(ctx context.Context, db sqlx.QueryerContext, st *stream, after *string) ([]subscription.Row, error) {
	if !st.afterSMS {
		return p.src.OpenPage(ctx, db, st.sel, st.from, after)
	}
	if !st.fromRead {
		from, err := p.src.OpenFrom(ctx, db, st.sel)
		if err != nil {
			return nil, err
		}
		st.from, st.fromRead = from, true
	}
	return p.src.AfterSMSPage(ctx, db, st.sel, st.from, after)
}

// awaitSweep keeps an afterSMS stream that has read its window once from
// ending: it waits for the sms stage's first sweep, then reads again
// (rewindAfterSweep).
func (st *stream) awaitSweep() {
	if st.afterSMS && st.done && !st.reread {
		st.done, st.waiting, st.awaiting = false, true, true
	}
}

// rewindAfterSweep rewinds an afterSMS stream waiting for the sms stage's
// first sweep to the start, for its second read, once that sweep has
// ended; it reports whether st waits for it (still, or until now).
func (st *stream) rewindAfterSweep() bool {
	if !st.awaiting {
		return false
	}
	select {
	case <-st.swept:
		st.cursor, st.waiting, st.awaiting, st.reread = nil, false, false, true
	default:
	}
	return true
}

// sweptWake is the channel the producer also waits on while an afterSMS
// stream waits for the sms stage's first sweep and the planner has room
// to read it (the producer rewinds it then); nil (never ready) otherwise.
func sweptWake(streams []*stream, pl *planner) <-chan struct{} {
	if pl.Full() {
		return nil
	}
	for _, st := range streams {
		if st.awaiting {
			return st.swept
		}
	}
	return nil
}

// newKeys is what --max-mint counts of a dry run: the new email keys,
// the new sms keys, and the email notices after sms.
func (d DryRunSummary) newKeys() int { return d.WouldMint + d.smsMint + d.WouldEmailAfterSMS }
