package main

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"scan/internal/notice"
)

// rotatedSecret is the secret a rotation moves to; testSecret is the one
// before it.
const rotatedSecret = "rotated-test-secret-fedcba9876543210fedcba"

// suppressionKeys returns the key id (hex) of every entry of channel's
// list whose digest is the address's under secret, "" for one without.
func (f *fixture) suppressionKeys(channel, addr, secret string) []string {
	f.t.Helper()
	h, err := notice.NewAddressHasher([]byte(secret))
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	if err := f.db.Select(&out, `SELECT COALESCE(encode(key_id, 'hex'), '') FROM notice_suppression WHERE channel = $1 AND address_hmac = $2`,
		channel, h.Digest(channel, addr)); err != nil {
		f.t.Fatal(err)
	}
	return out
}

func keyIDOf(t *testing.T, secret string) string {
	t.Helper()
	h, err := notice.NewAddressHasher([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.KeyID())
}

// Issue 38, section 2: a secret rotation keeps the suppression list.
// Suppressed under secret A; a pass under B with NOTICE_KEY_SECRET_PREVIOUS=A
// does not mail the address (the kind's sms takes it) and re-keys the
// entry under B in its claim statement; a later pass under B alone still
// does not mail it. Real PostgreSQL, real SMTP, the Twilio stand-in.
func TestSuppressionSurvivesRotation(t *testing.T) {
	t.Parallel()
	f, tw, twEnv := smsFixtureOf(t, "[email, sms]", "")
	const addr = "user1@example.net" // subscription 1's
	const phone = "+14155550001"
	if code, out, errOut := f.runIn(nil, "suppress", "add", "--email", "User1@Example.NET", "--reason", "asked by phone"); code != 0 || !strings.Contains(out, `"added":true`) {
		t.Fatalf("add under A: %d %s %s", code, out, errOut)
	}
	if got := f.suppressionKeys("email", addr, testSecret); len(got) != 1 || got[0] != keyIDOf(t, testSecret) {
		t.Fatalf("entry under A: key ids %v, want [%s]", got, keyIDOf(t, testSecret))
	}
	rotated := append([]string{"NOTICE_KEY_SECRET=" + rotatedSecret, "NOTICE_KEY_SECRET_PREVIOUS=" + testSecret}, twEnv...)

	// Before the pass, list --previous shows the entry keyed under A.
	code, out, errOut := f.runIn(rotated, "suppress", "list", "--previous")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"key":"previous"`) || !strings.Contains(errOut, `"previous":1`) {
		t.Fatalf("list --previous before the pass: %d %q %s", code, out, errOut)
	}
	if strings.Contains(out, rotatedSecret) || strings.Contains(out, testSecret) || strings.Contains(errOut, testSecret) {
		t.Fatal("list printed a secret")
	}

	s, errOut := f.passIn(rotated)
	if s.SuppressedAddress != 1 {
		t.Fatalf("pass under B with A previous: suppressed_address %d, want 1: %+v", s.SuppressedAddress, s)
	}
	if strings.Contains(errOut, testSecret) || strings.Contains(errOut, rotatedSecret) {
		t.Fatal("the pass logged a secret")
	}
	got := f.received()
	for i := 1; i <= smsNotices; i++ {
		id := notice.MessageID(f.key(subID(i), 0, rotatedSecret), testMsgIDDom)
		want := 1
		if i == 1 {
			want = 0
		}
		if got[id] != want {
			t.Errorf("%s mailed %d times, want %d", subID(i), got[id], want)
		}
	}
	if n := tw.To(phone); n != 1 {
		t.Errorf("the suppressed address's notice went by sms %d times, want 1 (the kind's next channel)", n)
	}
	if a, b := f.suppressionKeys("email", addr, testSecret), f.suppressionKeys("email", addr, rotatedSecret); len(a) != 0 || len(b) != 1 || b[0] != keyIDOf(t, rotatedSecret) {
		t.Fatalf("after the pass: entries under A %v (want none), under B %v (want [%s])", a, b, keyIDOf(t, rotatedSecret))
	}
	code, out, errOut = f.runIn(rotated, "suppress", "list", "--previous")
	if code != 0 || out != "" || strings.Contains(errOut, `"previous"`) || !strings.Contains(errOut, `"current":1`) {
		t.Fatalf("list --previous after the pass: %d %q %s", code, out, errOut)
	}

	// The list has turned over: the previous secret costs the next pass
	// no probe.
	if _, errOut := f.passIn(rotated); !strings.Contains(errOut, "the previous secrets are not probed") {
		t.Fatalf("a pass with every entry under B still probes A:\n%s", tail(errOut))
	}

	// The previous secret dropped: a new notice to the same address (a
	// second subscription of it) is still not mailed.
	f.add(1)
	if _, err := f.db.Exec(`UPDATE subscriptions SET email = 'USER1@example.net', phone = NULL WHERE id = $1`, subID(smsNotices+1)); err != nil {
		t.Fatal(err)
	}
	bOnly := append([]string{"NOTICE_KEY_SECRET=" + rotatedSecret}, twEnv...)
	s, _ = f.passIn(bOnly)
	if s.SuppressedAddress != 1 || s.Sent != 0 {
		t.Fatalf("pass under B alone: %+v, want suppressed_address 1 and nothing sent", s)
	}
	if n := f.received()[notice.MessageID(f.key(subID(smsNotices+1), 0, rotatedSecret), testMsgIDDom)]; n != 0 {
		t.Fatalf("the suppressed address was mailed %d times under B alone", n)
	}

	// remove under B with A previous takes the entry whichever key it
	// has; a bad previous secret is a usage error naming the variable.
	code, out, _ = f.runIn(rotated, "suppress", "remove", "--email", addr, "--reason", "lifted")
	var rm map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rm) != nil || rm["removed"] != true {
		t.Fatalf("remove: %d %s", code, out)
	}
	for _, bad := range []string{"short", testSecret + ",", rotatedSecret} {
		code, _, errOut := f.runIn([]string{"NOTICE_KEY_SECRET=" + rotatedSecret, "NOTICE_KEY_SECRET_PREVIOUS=" + bad}, "run", "--dry-run")
		if code != 2 || !strings.Contains(errOut, "NOTICE_KEY_SECRET_PREVIOUS") || (len(bad) > 8 && strings.Contains(errOut, bad)) {
			t.Errorf("NOTICE_KEY_SECRET_PREVIOUS=%q: exit %d, %s", bad, code, errOut)
		}
	}
}
