package reconcile_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/example/scan/internal/ledger"
	"github.com/example/scan/internal/reconcile"
)

// refLines classifies the lines of in as Read must: a line ends at "\n"
// (with one "\r" before it dropped); blank lines are not counted; a line
// longer than MaxLine is oversized. It returns the line numbers (from 1)
// of the counted lines, by whether they are oversized.
func refLines(in []byte) (counted map[int]bool, oversized map[int]bool) {
	counted, oversized = map[int]bool{}, map[int]bool{}
	if len(in) == 0 {
		return
	}
	lines := bytes.Split(in, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // the file ends with a newline
	}
	for i, l := range lines {
		if i < len(lines)-1 || in[len(in)-1] == '\n' {
			l = bytes.TrimSuffix(l, []byte("\r"))
		}
		switch {
		case len(l) > reconcile.MaxLine:
			counted[i+1], oversized[i+1] = true, true
		case len(bytes.TrimSpace(l)) > 0:
			counted[i+1] = true
		}
	}
	return
}

// FuzzRead checks that Read never panics or stops on bad input, accounts
// for every non-blank line exactly once (settled, malformed, oversized or
// irrelevant), reports problems by their true line number, and hands over
// only settlements with a bare Message-ID and a state it may set. The seed
// corpus is in testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"message_id":"<abc@n.example.com>","event":"delivered"}` + "\n"))
	f.Add([]byte("{\"message_id\":\"x@y\",\"event\":\"REJECTED\"}\r\n\r\n{\"message_id\":\"\",\"event\":\"sent\"}\nnot json"))
	f.Fuzz(func(t *testing.T, in []byte) {
		settled := 0
		st, err := reconcile.Read(bytes.NewReader(in), func(s ledger.Settlement) error {
			settled++
			if s.MessageID == "" || strings.HasPrefix(s.MessageID, "<") || strings.HasSuffix(s.MessageID, ">") {
				t.Fatalf("settlement with Message-ID %q", s.MessageID)
			}
			if s.To != ledger.Sent && s.To != ledger.Retry {
				t.Fatalf("settlement to %q", s.To)
			}
			if s.Event != strings.ToLower(s.Event) || reconcile.Settles(s.Event) != s.To {
				t.Fatalf("settlement event %q to %q", s.Event, s.To)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Read stopped on in-memory input: %v", err)
		}
		if st.Malformed+st.Oversized+st.Irrelevant+settled != st.Lines {
			t.Fatalf("%d lines but %d malformed + %d oversized + %d irrelevant + %d settled", st.Lines, st.Malformed, st.Oversized, st.Irrelevant, settled)
		}
		counted, oversized := refLines(in)
		if st.Lines != len(counted) || st.Oversized != len(oversized) {
			t.Fatalf("Read counted %d lines (%d oversized), want %d (%d)", st.Lines, st.Oversized, len(counted), len(oversized))
		}
		if len(st.Problems) > 100 || len(st.Problems) > st.Malformed+st.Oversized {
			t.Fatalf("%d problems for %d malformed and %d oversized", len(st.Problems), st.Malformed, st.Oversized)
		}
		last := 0
		for _, p := range st.Problems {
			if p.Line <= last || !counted[p.Line] || p.Reason == "" {
				t.Fatalf("problem %+v: not a counted line in order (after %d)", p, last)
			}
			if oversized[p.Line] != strings.Contains(p.Reason, "longer than") {
				t.Fatalf("problem %+v: oversized is %v", p, oversized[p.Line])
			}
			last = p.Line
		}
	})
}
