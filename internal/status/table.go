package status

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes s for a person at a terminal: one block per part,
// then what needs a person (or "all is well").
func WriteTable(w io.Writer, s Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "scan status at %s\n\n", s.Now.Format(time.RFC3339))
	fmt.Fprintln(tw, "SHARD\tLAST PASS\tSTARTED\tENDED\tRESULT\tCOUNTS")
	if len(s.LastPass) == 0 {
		fmt.Fprintln(tw, "-\tno pass recorded yet\t\t\t\t")
	}
	for _, p := range s.LastPass {
		fmt.Fprintf(tw, "%d/%d\t%s\t%s\t%s\t%s\t%s\n", p.Shard, p.Shards, p.RunID, stamp(&p.StartedAt),
			stamp(p.EndedAt), passResult(p), counts(p.Summary))
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "quarantine\t%d\toldest claimed %s\t%s\n", s.Quarantine.Count, stamp(s.Quarantine.OldestClaimedAt), claim(s.Quarantine.Oldest))
	fmt.Fprintf(tw, "retry\t%d\toldest claimed %s\t\n", s.Retry.Count, stamp(s.Retry.OldestClaimedAt))
	fmt.Fprintf(tw, "missed (24h)\t%d\t\t\n", s.Missed24h)
	fmt.Fprintf(tw, "undelivered (24h)\t%d\t\t\n", s.Undelivered24h)
	fmt.Fprintf(tw, "recovery needed\t%s\t\t\n", recovery(s))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "PROVIDER\tLAST COMMITTED BY THE RECEIVER\tEVENTS")
	if len(s.Receiver) == 0 {
		fmt.Fprintln(tw, "-\tnone recorded\t")
	}
	for _, r := range s.Receiver {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", r.Provider, stamp(&r.CommittedAt), r.Events)
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeProblems(w, s.Problems)
}

func writeProblems(w io.Writer, problems []string) error {
	if len(problems) == 0 {
		_, err := fmt.Fprintln(w, "all is well: nothing needs a person")
		return err
	}
	if _, err := fmt.Fprintf(w, "NEEDS A PERSON (%d):\n", len(problems)); err != nil {
		return err
	}
	for _, p := range problems {
		if _, err := fmt.Fprintln(w, "  - "+p); err != nil {
			return err
		}
	}
	return nil
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func passResult(p Pass) string {
	switch {
	case p.Running:
		return "running"
	case p.Failed && p.EndedAt == nil:
		return "NO END (killed?)"
	case p.Failed:
		return "FAILED"
	}
	return "completed"
}

// counts gives a pass's non-zero counts, by name.
func counts(m map[string]int) string {
	names := make([]string, 0, len(m))
	for k, v := range m {
		if v != 0 {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func claim(c *Claim) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("key %s subscription %s run %s", c.NoticeKey, c.SubscriptionID, c.RunID)
}

func recovery(s Status) string {
	switch {
	case s.RecoveryNeeded:
		return "YES: " + s.Recovery.Reason + "; run " + s.Recovery.Command + " (or " + s.Recovery.NoneLost + ")"
	case !s.TimelineChecked:
		return "unknown: the server does not tell its WAL timeline"
	}
	return "no"
}
