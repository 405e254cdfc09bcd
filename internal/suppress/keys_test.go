package suppress

import (
	"strings"
	"testing"
)

func TestParseKeysAndLabels(t *testing.T) {
	cur, prev := strings.Repeat("c", 32), strings.Repeat("p", 32)
	if _, err := ParseKeys("short", ""); err == nil {
		t.Error("a short secret was taken")
	}
	k, err := ParseKeys(cur, prev)
	if err != nil || len(k.Previous) != 1 {
		t.Fatalf("ParseKeys: %+v, %v", k, err)
	}
	label, ids, err := ParseLabels("", "", false)
	if err != nil || ids != nil || label("anything") != "" {
		t.Errorf("without a secret: %v %v %q", ids, err, label("anything"))
	}
	if _, _, err := ParseLabels("", "", true); err == nil {
		t.Error("--previous without a secret was taken")
	}
	label, ids, err = ParseLabels(cur, prev, true)
	want, wantIDs := k.Labels()
	if err != nil || len(ids) != 1 || ids[0] != wantIDs[0] || label(ids[0]) != want(ids[0]) || label(ids[0]) == "" {
		t.Errorf("with secrets: %v %v", ids, err)
	}
}
