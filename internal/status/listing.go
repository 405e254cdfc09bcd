package status

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/cli"
	"scan/internal/ledger"
	"scan/internal/notice"
)

// The read-only listings beside the status screen: `scan lookup`,
// `scan quarantine` and `scan undelivered`, in the -o formats of
// cli.Listing. Like the screen, none holds an address.

// Rows is ledger rows as lookup and quarantine print them; empty is the
// table's line when there are none.
func Rows(rows []ledger.Row, empty string) *cli.Listing {
	l := &cli.Listing{Empty: empty, Header: []string{"key", "subscription", "kind", "period", "rev", "state", "claimed", "sent", "attempts", "last_error"}}
	for _, r := range rows {
		l.Records = append(l.Records, struct {
			ledger.Row
			PeriodStart string `json:"period_start"`
		}{r, r.Period()})
		sent := "-"
		if r.SentAt != nil {
			sent = r.SentAt.UTC().Format(time.RFC3339)
		}
		lastErr := "-"
		if r.LastError != nil {
			lastErr = *r.LastError
		}
		l.Cells = append(l.Cells, []string{notice.Short(r.NoticeKey), r.SubscriptionID, r.Kind, r.Period(), strconv.Itoa(r.Revision),
			string(r.State), r.ClaimedAt.UTC().Format(time.RFC3339), sent, strconv.Itoa(r.Attempts), lastErr})
	}
	return l
}

// WriteLookup writes one subscription's rows (ledger.Lookup) in format:
// JSON gives each row with its evidence; the table adds, under the rows,
// each notice's digest and evidence (WriteEvidence).
func WriteLookup(w io.Writer, hs []ledger.History, format string) error {
	rows := make([]ledger.Row, len(hs))
	for i, h := range hs {
		rows[i] = h.Row
	}
	l := Rows(rows, "")
	if format == cli.JSON {
		l.Records = l.Records[:0]
		for _, h := range hs {
			l.Records = append(l.Records, h)
		}
	}
	if err := l.Print(w, format); err != nil || format != cli.Table {
		return err
	}
	return WriteEvidence(w, hs)
}

// WriteEvidence writes, under lookup's table, each notice's digest and the
// evidence kept for each of its attempts.
func WriteEvidence(w io.Writer, hs []ledger.History) error {
	for _, h := range hs {
		r := h.Row
		digest := r.Digest()
		if digest == "" {
			digest = "- (no message handed over in this attempt)"
		}
		fmt.Fprintf(w, "\n%s %s %s rev %d by %s: %d attempt(s), now %s\n  sha256 of the message handed over: %s\n",
			notice.Short(r.NoticeKey), r.Kind, r.Period(), r.Revision, r.Channel, r.Attempts, r.State, digest)
		if r.Rule != nil {
			fmt.Fprintf(w, "  deadline: %s, in %s\n", *r.Rule, orDash(r.TimeZone))
		}
		if r.Reason != nil {
			fmt.Fprintf(w, "  reason: %s\n", *r.Reason)
		}
		if r.Sender != nil {
			fmt.Fprintf(w, "  sender: %s\n", *r.Sender)
		}
		es := h.Evidence
		if len(es) == 0 {
			fmt.Fprintln(w, "  no provider evidence kept")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ATTEMPT\tKIND\tAT\tEVENT\tDETAIL")
		for _, e := range es {
			at := "-"
			if e.At != nil {
				at = e.At.UTC().Format(time.RFC3339)
			}
			detail := e.Detail
			if detail == "" {
				detail = "-"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", e.Attempt, e.Kind, at, e.Event, detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func orDash(p *string) string {
	if p == nil || *p == "" {
		return "-"
	}
	return *p
}

// Undelivered is the notices that reached the customer by no channel
// (ledger.Undelivered) as `scan undelivered` prints them.
func Undelivered(list []ledger.Unreached) *cli.Listing {
	l := &cli.Listing{Header: []string{"subscription_id", "kind", "period_start", "revision", "channels", "reason", "at"},
		Empty: "no undelivered notices"}
	for _, u := range list {
		l.Records = append(l.Records, u)
		l.Cells = append(l.Cells, []string{u.SubscriptionID, u.Kind, u.PeriodStart, strconv.Itoa(u.Revision), u.Channels, u.Reason, u.At.UTC().Format(time.RFC3339)})
	}
	return l
}

// QuarantineList returns the oldest claims with no recorded outcome claimed
// before before, at most limit, and how many there are in all. One row
// more than the limit tells whether the list is cut; only then is the
// whole counted.
func QuarantineList(ctx context.Context, db sqlx.QueryerContext, before time.Time, limit int) ([]ledger.Row, int, error) {
	rows, err := ledger.Quarantine(ctx, db, before, limit+1)
	if err != nil {
		return nil, 0, err
	}
	total := len(rows)
	if total > limit {
		rows = rows[:limit]
		if total, err = ledger.QuarantineCount(ctx, db, before); err != nil {
			return nil, 0, err
		}
	}
	return rows, total, nil
}
