package notice

import (
	"testing"
	"time"
)

func date(s string) time.Time {
	t, err := time.Parse(DateLayout, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Vectors computed independently (Python hmac/hashlib) from the contract's
// definition: hex(HMAC-SHA256(secret, id|YYYY-MM-DD|kind|revision)).
func TestKeyVectors(t *testing.T) {
	t.Parallel()
	k, err := NewKeyer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tuple Tuple
		want  string
	}{
		{Tuple{"sub_8812", date("2026-10-01"), "renewal_notice_t72", 0}, "71f814f6095c5859dc7edcea61ed936858d1e87de3bbd9afad585dba615286fa"},
		{Tuple{"sub_8812", date("2026-10-01"), "renewal_notice_t72", 1}, "d83b07cc324166860228b715587e692877e90551bff781a8d489279d01f37ffc"},
		{Tuple{"x", date("2026-01-31"), "k", 12}, "60d0212de77f1460dfb1d0d20b403fc8edbe9a3638c18ce55b1f5fa1e932f790"},
	} {
		if got := k.Key(tc.tuple); got != tc.want {
			t.Errorf("Key(%+v) = %s, want %s", tc.tuple, got, tc.want)
		}
		if !ValidKey(k.Key(tc.tuple)) {
			t.Errorf("ValidKey false for %+v", tc.tuple)
		}
	}
}

func TestKeyIgnoresTimeOfDayAndZone(t *testing.T) {
	t.Parallel()
	k, _ := NewKeyer([]byte("0123456789abcdef0123456789abcdef"))
	a := k.Key(Tuple{"s", time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), "k", 0})
	b := k.Key(Tuple{"s", time.Date(2026, 10, 1, 23, 59, 0, 0, time.UTC), "k", 0})
	if a != b {
		t.Fatal("time of day changed the key")
	}
}

func TestCancelTokenSharedAcrossRevisions(t *testing.T) {
	t.Parallel()
	k, _ := NewKeyer([]byte("0123456789abcdef0123456789abcdef"))
	r0 := Tuple{"sub_8812", date("2026-10-01"), "renewal_notice_t72", 0}
	r1 := r0
	r1.Revision = 1
	if got := k.CancelToken(r0); got != "21f787417faa3c772d7a3d72dba0254b" {
		t.Fatalf("CancelToken = %s", got)
	}
	if k.CancelToken(r0) != k.CancelToken(r1) {
		t.Fatal("a corrected notice must carry the same cancellation token")
	}
	if k.Key(r0) == k.Key(r1) {
		t.Fatal("revisions must have distinct keys")
	}
}

// CancelTokenOf, given the first revision's key, is CancelToken; the
// key and the token each cost one allocation.
func TestCancelTokenOfFirstKey(t *testing.T) {
	k, _ := NewKeyer([]byte("0123456789abcdef0123456789abcdef"))
	r0 := Tuple{"sub_8812", date("2026-10-01"), "renewal_notice_t72", 0}
	if got := k.CancelTokenOf(k.Key(r0)); got != "21f787417faa3c772d7a3d72dba0254b" {
		t.Fatalf("CancelTokenOf = %s", got)
	}
	if a := testing.AllocsPerRun(100, func() { k.CancelTokenOf(k.Key(r0)) }); a != 2 {
		t.Fatalf("%v allocations for a key and a token, want 2", a)
	}
}

func TestNewKeyerRejectsShortSecret(t *testing.T) {
	t.Parallel()
	if _, err := NewKeyer([]byte("short")); err != ErrShortSecret {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateKind(t *testing.T) {
	t.Parallel()
	for kind, ok := range map[string]bool{"renewal_notice_t72": true, "": false, "a|b": false} {
		if (ValidateKind(kind) == nil) != ok {
			t.Errorf("ValidateKind(%q) ok=%v", kind, !ok)
		}
	}
}

func BenchmarkKey(b *testing.B) {
	k, _ := NewKeyer([]byte("0123456789abcdef0123456789abcdef"))
	tu := Tuple{"sub_000000000123", date("2026-10-01"), "renewal_notice_t72", 0}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.Key(tu)
	}
}
