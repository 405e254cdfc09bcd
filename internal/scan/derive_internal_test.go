package scan

import (
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
)

// derive gives every notice CancelToken of its tuple, whether it derives
// the key itself (revision 0 reuses it as the token's material), derives
// a later revision's, or takes a key the ledger gave (which may be under
// an older secret: never the token's material).
func TestDeriveCancelToken(t *testing.T) {
	t.Parallel()
	k, err := notice.NewKeyer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	p := &Pass{keyer: k, cfg: Config{Policy: &policy.Policy{MessageIDDomain: "notices.example.com"}}}
	r0 := notice.Tuple{SubscriptionID: "sub_8812", PeriodStart: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Kind: "renewal_notice_t72"}
	r2 := r0
	r2.Revision = 2
	for _, tc := range []struct {
		name string
		tup  notice.Tuple
		key  string // the ledger's key, "" to derive
	}{
		{"derived, revision 0", r0, ""},
		{"derived, revision 2", r2, ""},
		{"the ledger's key, revision 0", r0, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"},
	} {
		dn := due{claim: ledger.Claim{Tuple: tc.tup, Key: tc.key}}
		p.derive(&dn)
		if want := k.CancelToken(tc.tup); dn.claim.CancelToken != want || want != "21f787417faa3c772d7a3d72dba0254b" {
			t.Errorf("%s: token %s, want %s", tc.name, dn.claim.CancelToken, want)
		}
		if tc.key == "" && dn.claim.Key != k.Key(tc.tup) || tc.key != "" && dn.claim.Key != tc.key {
			t.Errorf("%s: key %s", tc.name, dn.claim.Key)
		}
	}
}
