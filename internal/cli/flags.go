// Package cli holds the command line's conventions, the same for every
// command of scan: -o json|csv|table and how a listing prints, time flags
// that take a duration or an instant, and the "did you mean" of a typo.
// docs/cli.md describes them.
package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"scan/internal/policy"
)

// The formats of -o.
const (
	JSON  = "json"
	CSV   = "csv"
	Table = "table"
)

// Output is the -o flag every listing command takes, with its hidden
// aliases --json and (where it meant the output) --format.
type Output struct {
	format string
	json   bool
}

// OutputFlag declares -o/--output, and the hidden --json; withFormat adds
// the hidden --format.
func OutputFlag(fs *pflag.FlagSet, withFormat bool) *Output {
	o := &Output{}
	fs.StringVarP(&o.format, "output", "o", "", "json (one object a line), csv or table (default: table on a terminal, else json)")
	fs.BoolVar(&o.json, "json", false, "the same as -o json")
	_ = fs.MarkHidden("json")
	if withFormat {
		fs.StringVar(&o.format, "format", "", "the same as -o")
		_ = fs.MarkHidden("format")
	}
	return o
}

// Format returns the format to print in: json, csv or table; with none
// given, table on a terminal and json otherwise.
func (o *Output) Format(terminal bool) (string, error) {
	f := o.format
	if o.json {
		if f != "" && f != JSON {
			return "", fmt.Errorf("--json and -o %s contradict each other", f)
		}
		f = JSON
	}
	switch f {
	case "":
		if terminal {
			return Table, nil
		}
		return JSON, nil
	case JSON, CSV, Table:
		return f, nil
	}
	return "", fmt.Errorf("%q is not one of json, csv, table", f)
}

// Listing is what a listing command prints: the records as JSON lines,
// and the same as the cells of a table or of a CSV under Header.
type Listing struct {
	Header  []string
	Records []any
	Cells   [][]string
	Empty   string // the table's line when there is nothing (JSON prints nothing, CSV the header)
}

// Print writes l in format (JSON, CSV or Table).
func (l *Listing) Print(w io.Writer, format string) error {
	switch format {
	case JSON:
		enc := json.NewEncoder(w)
		for _, r := range l.Records {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	case CSV:
		cw := csv.NewWriter(w)
		_ = cw.Write(l.Header)
		_ = cw.WriteAll(l.Cells)
		return cw.Error()
	}
	if len(l.Cells) == 0 && l.Empty != "" {
		_, err := fmt.Fprintln(w, l.Empty)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(l.Header, "\t")))
	for _, c := range l.Cells {
		fmt.Fprintln(tw, strings.Join(c, "\t"))
	}
	return tw.Flush()
}

// TimeFlag is a time flag (--since, --older-than): a duration back from
// now (30m, 2d) or an RFC 3339 instant. Every time flag parses with it.
type TimeFlag struct {
	raw string
	d   time.Duration
	at  time.Time // set for an instant
}

// NewTimeFlag returns a time flag whose default is dflt ("" for none).
func NewTimeFlag(dflt string) *TimeFlag {
	t := &TimeFlag{}
	if dflt != "" {
		if err := t.Set(dflt); err != nil {
			panic(err)
		}
	}
	return t
}

func (t *TimeFlag) Set(s string) error {
	if at, err := time.Parse(time.RFC3339, s); err == nil {
		*t = TimeFlag{raw: s, at: at}
		return nil
	}
	d, err := policy.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("%q is neither a duration (30m, 2d) nor an RFC 3339 instant (2026-11-30T02:00:00Z)", s)
	}
	*t = TimeFlag{raw: s, d: d}
	return nil
}

func (t *TimeFlag) String() string { return t.raw }

func (t *TimeFlag) Type() string { return "D|T" }

// Given reports whether the flag has a value (set, or a default).
func (t *TimeFlag) Given() bool { return t.raw != "" }

// Instant is the flag's time: the instant, or now less the duration.
func (t *TimeFlag) Instant(now time.Time) time.Time {
	if !t.at.IsZero() {
		return t.at
	}
	return now.Add(-t.d)
}

// Ago is the flag's time as a duration back from now.
func (t *TimeFlag) Ago(now time.Time) time.Duration {
	if !t.at.IsZero() {
		return now.Sub(t.at)
	}
	return t.d
}

// OptionalInt is an int flag with no default: --max-mint N. Its help
// shows no "(default -1)".
type OptionalInt struct {
	n   int
	set bool
}

func (o *OptionalInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	o.n, o.set = n, true
	return nil
}

func (o *OptionalInt) String() string {
	if !o.set {
		return ""
	}
	return fmt.Sprint(o.n)
}

func (o *OptionalInt) Type() string { return "N" }

// Value returns the number, and whether it was given.
func (o *OptionalInt) Value() (int, bool) { return o.n, o.set }

// ShardFlag is --shard I/N: shard I of N, with 0 <= I < N.
type ShardFlag struct {
	raw  string
	i, n int
}

func (s *ShardFlag) Set(v string) error {
	i, n, ok := strings.Cut(v, "/")
	si, err1 := strconv.Atoi(i)
	sn, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || sn < 1 || si < 0 || si >= sn {
		return fmt.Errorf("%q is not a shard I/N with 0 <= I < N (e.g. 0/4)", v)
	}
	*s = ShardFlag{raw: v, i: si, n: sn}
	return nil
}

func (s *ShardFlag) String() string { return s.raw }

func (s *ShardFlag) Type() string { return "I/N" }

// Value returns the shard and the number of shards, and whether the flag
// was given.
func (s *ShardFlag) Value() (i, n int, ok bool) { return s.i, s.n, s.raw != "" }

// Resolve returns the shard the flag gives, else the one of a Kubernetes
// indexed Job: index (JOB_COMPLETION_INDEX) of shards (--shards) when
// shards is above 1, else shard 0 of 1. A wrong one is a *UsageError.
func (s *ShardFlag) Resolve(shards int, index string) (i, n int, err error) {
	if i, n, ok := s.Value(); ok {
		return i, n, nil
	}
	if shards < 0 {
		return 0, 0, Usagef("--shards", "must be at least 1")
	}
	if shards > 1 {
		i, err := strconv.Atoi(index)
		if err != nil || i < 0 || i >= shards {
			return 0, 0, Usagef("JOB_COMPLETION_INDEX", "%q is not a shard index below --shards=%d", index, shards)
		}
		return i, shards, nil
	}
	return 0, 1, nil
}

// ListFlag is a flag that may be repeated and takes comma-separated
// values: --kind a,b --kind c.
type ListFlag []string

func (l *ListFlag) String() string { return strings.Join(*l, ",") }

func (l *ListFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func (l *ListFlag) Type() string { return "LIST" }
