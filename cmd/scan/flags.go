package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"scan/internal/policy"
)

// The formats of -o.
const (
	outJSON  = "json"
	outCSV   = "csv"
	outTable = "table"
)

// output is the -o flag every listing command takes, with its hidden
// aliases --json and (where it meant the output) --format.
type output struct {
	format string
	json   bool
}

// outputFlag declares -o/--output, and the hidden --json; withFormat adds
// the hidden --format.
func outputFlag(fs *pflag.FlagSet, withFormat bool) *output {
	o := &output{}
	fs.StringVarP(&o.format, "output", "o", "", "json (one object a line), csv or table (default: table on a terminal, else json)")
	fs.BoolVar(&o.json, "json", false, "the same as -o json")
	_ = fs.MarkHidden("json")
	if withFormat {
		fs.StringVar(&o.format, "format", "", "the same as -o")
		_ = fs.MarkHidden("format")
	}
	return o
}

// resolve returns the format to print in: json, csv or table.
func (o *output) resolve(e *env) (string, error) {
	f := o.format
	if o.json {
		if f != "" && f != outJSON {
			return "", usagef("-o", "--json and -o %s contradict each other", f)
		}
		f = outJSON
	}
	switch f {
	case "":
		if isTerminal(e.stdout) {
			return outTable, nil
		}
		return outJSON, nil
	case outJSON, outCSV, outTable:
		return f, nil
	}
	return "", usagef("-o", "%q is not one of json, csv, table", f)
}

// listing is what a listing command prints: the records as JSON, and the
// same as the cells of a table or a CSV under header.
type listing struct {
	header  []string
	records []any
	cells   [][]string
	empty   string // the table's line when there is nothing (JSON and CSV print nothing, or the header)
}

// print writes l in format.
func (l *listing) print(w io.Writer, format string) error {
	switch format {
	case outJSON:
		enc := json.NewEncoder(w)
		for _, r := range l.records {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	case outCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write(l.header)
		_ = cw.WriteAll(l.cells)
		return cw.Error()
	}
	if len(l.cells) == 0 && l.empty != "" {
		_, err := fmt.Fprintln(w, l.empty)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(l.header, "\t")))
	for _, c := range l.cells {
		fmt.Fprintln(tw, strings.Join(c, "\t"))
	}
	return tw.Flush()
}

// timeFlag is a time flag (--since, --older-than): a duration back from
// now (30m, 2d) or an RFC 3339 instant. Every time flag parses with it.
type timeFlag struct {
	raw string
	d   time.Duration
	at  time.Time // set for an instant
}

// newTimeFlag returns a time flag whose default is dflt ("" for none).
func newTimeFlag(dflt string) *timeFlag {
	t := &timeFlag{}
	if dflt != "" {
		if err := t.Set(dflt); err != nil {
			panic(err)
		}
	}
	return t
}

func (t *timeFlag) Set(s string) error {
	if at, err := time.Parse(time.RFC3339, s); err == nil {
		*t = timeFlag{raw: s, at: at}
		return nil
	}
	d, err := policy.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("%q is neither a duration (30m, 2d) nor an RFC 3339 instant (2026-11-30T02:00:00Z)", s)
	}
	*t = timeFlag{raw: s, d: d}
	return nil
}

func (t *timeFlag) String() string { return t.raw }

func (t *timeFlag) Type() string { return "D|T" }

// given reports whether the flag has a value (set, or a default).
func (t *timeFlag) given() bool { return t.raw != "" }

// instant is the flag's time: the instant, or now less the duration.
func (t *timeFlag) instant(now time.Time) time.Time {
	if !t.at.IsZero() {
		return t.at
	}
	return now.Add(-t.d)
}

// ago is the flag's time as a duration back from now.
func (t *timeFlag) ago(now time.Time) time.Duration {
	if !t.at.IsZero() {
		return now.Sub(t.at)
	}
	return t.d
}

// optionalInt is an int flag with no default: --max-mint N. Its help
// shows no "(default -1)".
type optionalInt struct {
	n   int
	set bool
}

func (o *optionalInt) Set(s string) error {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || fmt.Sprint(n) != strings.TrimPrefix(s, "+") {
		return fmt.Errorf("%q is not a whole number", s)
	}
	o.n, o.set = n, true
	return nil
}

func (o *optionalInt) String() string {
	if !o.set {
		return ""
	}
	return fmt.Sprint(o.n)
}

func (o *optionalInt) Type() string { return "N" }

// listFlag is a flag that may be repeated and takes comma-separated
// values: --kind a,b --kind c.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func (l *listFlag) Type() string { return "LIST" }
