package reconcile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// Every payload of every provider fixture that decodes has a kind of
// Kinds, and one that proves nothing is "other".
func TestFixtureKinds(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../provider/*/testdata/*.txt")
	if err != nil || len(files) < len(reconcile.Formats)-1 {
		t.Fatalf("fixtures %v, %v", files, err)
	}
	for _, f := range files {
		format := filepath.Base(filepath.Dir(filepath.Dir(f))) // ../provider/<format>/testdata
		dec := reconcile.DecoderOf(format)
		if dec == nil {
			t.Fatalf("%s: no decoder %q", f, format)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		if _, err := reconcile.Split(bytes.NewReader(b), func(line int, payload []byte, problem string, oversized bool) error {
			if problem != "" || oversized {
				return nil
			}
			ev, err := dec(payload)
			if err != nil {
				return nil
			}
			seen++
			if !slices.Contains(ledger.EventKinds, ev.Kind) || ev.To == "" && ev.Kind != ledger.KindOther {
				t.Errorf("%s:%d: kind %q, state %q", f, line, ev.Kind, ev.To)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if seen == 0 {
			t.Errorf("%s: no payload decoded", f)
		}
	}
}
