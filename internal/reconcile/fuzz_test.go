package reconcile_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/reconcile"
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

// FuzzReadFormat checks that the provider readers never panic or stop on
// bad input, account for every payload exactly once (settled, malformed,
// oversized or irrelevant), count the lines of the input, report problems
// in order on lines that exist, and hand over only settlements that name
// a claim (a valid key, a provider id or a bare Message-ID) with a state
// reconcile may set. The seeds are the provider fixtures and
// testdata/fuzz/FuzzReadFormat.
func FuzzReadFormat(f *testing.F) {
	formats := reconcile.Formats[1:] // jsonl is FuzzRead
	for i, name := range formats {
		b, err := os.ReadFile(fixturePath(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	f.Add(uint8(1), []byte("[{\"event\":\"delivered\",\"notice_key\":\"x\n[1,2]\n{\"a\":\"\\\"}\"}\n\xef\xbb\xbf{}"))
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		format := formats[int(which)%len(formats)]
		settled := 0
		st, err := reconcile.ReadFormat(bytes.NewReader(in), format, func(s ledger.Settlement) error {
			settled++
			if s.Key == "" && s.ProviderID == "" && s.MessageID == "" {
				t.Fatalf("settlement names no claim: %+v", s)
			}
			if s.Key != "" && !notice.ValidKey(s.Key) {
				t.Fatalf("settlement with key %q", s.Key)
			}
			if strings.HasPrefix(s.MessageID, "<") || strings.HasSuffix(s.MessageID, ">") || s.MessageID != strings.TrimSpace(s.MessageID) {
				t.Fatalf("settlement with Message-ID %q", s.MessageID)
			}
			if s.To != ledger.Sent && s.To != ledger.Retry && s.To != ledger.Failed {
				t.Fatalf("settlement to %q", s.To)
			}
			if !strings.HasPrefix(s.Event, format+":") || s.Event != strings.ToLower(s.Event) {
				t.Fatalf("settlement event %q", s.Event)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("ReadFormat stopped on in-memory input: %v", err)
		}
		if st.Malformed+st.Oversized+st.Irrelevant+settled != st.Payloads {
			t.Fatalf("%d payloads but %d malformed + %d oversized + %d irrelevant + %d settled", st.Payloads, st.Malformed, st.Oversized, st.Irrelevant, settled)
		}
		body := bytes.TrimPrefix(in, []byte("\xef\xbb\xbf"))
		lines := bytes.Count(body, []byte("\n"))
		if len(body) > 0 && body[len(body)-1] != '\n' {
			lines++
		}
		if st.Lines != lines {
			t.Fatalf("Lines = %d, want %d", st.Lines, lines)
		}
		if len(st.Problems) > 100 || len(st.Problems) > st.Malformed+st.Oversized {
			t.Fatalf("%d problems for %d malformed and %d oversized", len(st.Problems), st.Malformed, st.Oversized)
		}
		last := 1
		for _, p := range st.Problems {
			if p.Line < last || p.Line > max(lines, 1) || p.Reason == "" {
				t.Fatalf("problem %+v: out of order or on no line (after %d, %d lines)", p, last, lines)
			}
			last = p.Line
		}
	})
}
