package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/metrics/metricstest"
	"scan/internal/notice"
	"scan/internal/proof"
)

// proofFiles runs `scan proof` for id into a new directory and returns
// its exit code, stderr and the directory.
func (f *fixture) proofFiles(extra []string, id string, args ...string) (int, string, string) {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "proof")
	code, _, errOut := f.runIn(extra, append([]string{"proof", "--subscription", id, "--out", dir}, args...)...)
	return code, errOut, dir
}

// lookupDigest is the message_sha256 `scan lookup --json` prints for the
// subscription's notice of channel.
func (f *fixture) lookupDigest(id, channel string) string {
	f.t.Helper()
	code, out, errOut := f.runIn(nil, "lookup", id, "--json")
	if code != 0 {
		f.t.Fatalf("lookup: exit %d\n%s", code, errOut)
	}
	for _, r := range jsonLines[map[string]any](f.t, out) {
		if r["channel"] == channel {
			d, _ := r["message_sha256"].(string)
			return d
		}
	}
	f.t.Fatalf("lookup %s: no %s notice\n%s", id, channel, out)
	return ""
}

// pdfText is pdftotext's reading of path.
func pdfText(t *testing.T, path string) string {
	t.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext (Debian's poppler-utils) is not installed: .ci/run installs it")
	}
	out, err := exec.Command("pdftotext", "-layout", path, "-").CombinedOutput()
	if err != nil {
		t.Fatalf("pdftotext %s: %v\n%s", path, err, out)
	}
	return string(out)
}

// readProof returns the message and the record `scan proof` wrote for key.
func readProof(t *testing.T, dir, key, ext string) ([]byte, proof.Record) {
	t.Helper()
	msg, err := os.ReadFile(filepath.Join(dir, notice.Short(key)+ext))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, notice.Short(key)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec proof.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("@example.net\"")) && !bytes.Contains(b, []byte("***@")) {
		t.Fatalf("the JSON carries an address in the clear:\n%s", b)
	}
	return msg, rec
}

// wantPDF checks the PDF of key: under Stripe's 5 MB, and its text names
// every one of want.
func wantPDF(t *testing.T, dir, key string, want ...string) {
	t.Helper()
	path := filepath.Join(dir, notice.Short(key)+".pdf")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() >= 5<<20 {
		t.Fatalf("PDF is %d bytes, over Stripe's 5 MB", st.Size())
	}
	text := strings.Join(strings.Fields(pdfText(t, path)), " ")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the PDF's text lacks %q:\n%s", w, text)
		}
	}
}

// Issue 37: a notice is sent; then its template and the subscription's
// amount change. `scan proof` still writes the message as sent: the SMTP
// server's copy ends with exactly its bytes, its SHA-256 is lookup's
// digest, and the PDF shows the subscription, the kind, the sent and
// delivered times and the original amount. A tampered kept message is
// refused (exit 1, named, no file) and counted by --verify; after prune
// of its period, proof finds nothing.
func TestProofOfAnEmailNoticeAfterTheTemplateAndAmountChanged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	if _, err := f.db.Exec(`UPDATE subscriptions SET amount = 12.99, currency = 'USD'`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tmpl := func(version string) {
		for name, body := range map[string]string{
			"default.subject.tmpl": "Your renewal ({{.Kind}})",
			"default.txt.tmpl":     version + ": you will be charged {{.Amount}} on {{.RenewsOn}}. Cancel: {{.CancelURL}}\n",
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmpl("Template one")
	pol, err := os.ReadFile(f.policy)
	if err != nil {
		t.Fatal(err)
	}
	f.setPolicy(string(pol) + "\ntemplates_dir: " + dir + "\n")
	if s, _ := f.passIn(nil); s.Sent != 2 {
		t.Fatalf("pass = %+v, want 2 sent", s)
	}
	deliveredAt := time.Date(2026, 11, 30, 9, 41, 7, 0, time.UTC)
	key1, key2 := f.key(subID(1), 0, testSecret), f.key(subID(2), 0, testSecret)
	events := fmt.Sprintf(`{"message_id":"<%s>","event":"delivered","timestamp":%q}`+"\n", f.msgID(subID(1)), deliveredAt.Format(time.RFC3339))
	if r := f.reconcile(events); r.code != 0 {
		t.Fatalf("reconcile: exit %d\n%s", r.code, r.stderr)
	}
	tmpl("Template two")
	if _, err := f.db.Exec(`UPDATE subscriptions SET amount = 99.00`); err != nil {
		t.Fatal(err)
	}

	code, errOut, out := f.proofFiles(nil, subID(1))
	if code != 0 {
		t.Fatalf("proof: exit %d\n%s", code, errOut)
	}
	eml, rec := readProof(t, out, key1, ".eml")
	var got []byte
	for _, m := range f.smtp.Messages() {
		if m.MessageID == f.msgID(subID(1)) {
			got = m.Raw
		}
	}
	if !bytes.HasSuffix(got, eml) || len(eml) < 200 {
		t.Fatalf("the SMTP server's copy does not end with the proof's %d bytes:\nproof:\n%s\nserver:\n%s", len(eml), eml, got)
	}
	if !bytes.Contains(eml, []byte("Template one")) || !bytes.Contains(eml, []byte("12.99")) {
		t.Fatalf("the proof is not the message as sent:\n%s", eml)
	}
	sum := sha256.Sum256(eml)
	if d := f.lookupDigest(subID(1), "email"); d != hex.EncodeToString(sum[:]) || d != rec.MessageSHA256 {
		t.Fatalf("sha256 of the .eml = %x, lookup's digest %s, the JSON's %s", sum, d, rec.MessageSHA256)
	}
	if !rec.DigestVerified || rec.To != "u***@example.net" || rec.Delivery != "delivered" || rec.DeliveredAt == nil ||
		!rec.DeliveredAt.Equal(deliveredAt) || len(rec.Attempts) != 1 || rec.Attempts[0].SentAt == nil || len(rec.Evidence) == 0 {
		t.Fatalf("record = %+v", rec)
	}
	wantPDF(t, out, key1, subID(1), testKind, "12.99", stamp(*rec.Attempts[0].SentAt), "2026-11-30 09:41:07 UTC", "u***@example.net", rec.MessageSHA256)
	if text := pdfText(t, filepath.Join(out, notice.Short(key1)+".pdf")); strings.Contains(text, "99.00") || strings.Contains(text, "Template two") {
		t.Fatalf("the PDF shows today's amount or template:\n%s", text)
	}
	if code, _, _ := f.proofFiles(nil, subID(1), "--channel", "sms"); code != 1 {
		t.Fatalf("proof of a channel with no notice: exit %d, want 1", code)
	}

	// Tamper with the kept message of sub 2: a valid DEFLATE stream of
	// other bytes.
	dict, err := ledger.MessageDict()
	if err != nil {
		t.Fatal(err)
	}
	forged, err := ledger.CompressMessage([]byte("From: someone else\r\n\r\nnot what was sent\r\n"), dict.Body)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := f.db.Exec(`UPDATE notice_ledger SET message = $1 WHERE notice_key = $2 AND message IS NOT NULL`, forged, key2); err != nil {
		t.Fatal(err)
	} else if n, _ := r.RowsAffected(); n != 1 {
		t.Fatalf("tampered with %d kept messages, want 1", n)
	}
	code, errOut, out = f.proofFiles(nil, subID(2))
	if code != 1 || !strings.Contains(errOut, notice.Short(key2)) || !strings.Contains(errOut, "does not match") {
		t.Fatalf("proof of a tampered message: exit %d, %q; want 1 naming %s", code, errOut, notice.Short(key2))
	}
	if files, _ := os.ReadDir(out); len(files) != 0 {
		t.Fatalf("proof wrote %d file(s) for a message that does not verify", len(files))
	}
	gw := metricstest.New(t)
	code, stdout, errOut := f.runIn([]string{"PUSHGATEWAY_URL=" + gw.URL}, "proof", "--verify")
	var check ledger.MessageCheck
	if err := json.Unmarshal([]byte(stdout), &check); err != nil || code != 1 || check.Checked != 2 || check.Verified != 1 ||
		len(check.Mismatched) != 1 || check.Mismatched[0] != notice.Short(key2) {
		t.Fatalf("verify: exit %d, %s (%v), %s", code, stdout, err, errOut)
	}
	wantVerifyPush(t, gw, 1, 1)
	if code, stdout, _ := f.runIn(nil, "proof", "--verify", "--sample", "1"); code == 2 || !strings.Contains(stdout, `"checked":1`) {
		t.Fatalf("verify --sample 1: exit %d, %s", code, stdout)
	}

	// Prune of its period: nothing left to prove. The current attempts'
	// messages go with the ledger's months (uncounted, like their rows);
	// messages_removed counts notice_message's (earlier attempts: none).
	later := f.renews.AddDate(0, 0, 500).Format(time.RFC3339)
	if code, stdout, errOut := f.runIn(nil, "prune", "--older-than", "400d", "--now", later); code != 0 || !strings.Contains(stdout, `"messages_removed":0`) {
		t.Fatalf("prune: exit %d, %s\n%s", code, stdout, errOut)
	}
	var kept int
	if err := f.db.Get(&kept, `SELECT count(*) FROM notice_message`); err != nil || kept != 0 {
		t.Fatalf("%d kept messages after prune (%v), want 0", kept, err)
	}
	if code, errOut, _ := f.proofFiles(nil, subID(1)); code != 1 || !strings.Contains(errOut, "no notice matches") {
		t.Fatalf("proof after prune: exit %d, %q; want 1, nothing matches", code, errOut)
	}
}

// Issue 37, the same for an sms through the Twilio stand-in: the .txt is
// the body Twilio got, byte for byte, whatever the amount is now.
func TestProofOfAnSMSNotice(t *testing.T) {
	t.Parallel()
	f, tw, env := smsFixtureOf(t, "[sms]", "")
	if _, err := f.db.Exec(`UPDATE subscriptions SET amount = 7.50, currency = 'USD' WHERE id = $1`, subID(3)); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.passIn(env); s.Sent != smsNotices {
		t.Fatalf("pass = %+v, want %d sent", s, smsNotices)
	}
	if _, err := f.db.Exec(`UPDATE subscriptions SET amount = 70.00 WHERE id = $1`, subID(3)); err != nil {
		t.Fatal(err)
	}
	code, errOut, out := f.proofFiles(env, subID(3), "--channel", "sms", "--kind", testKind, "--period-start", f.periodStart())
	if code != 0 {
		t.Fatalf("proof: exit %d\n%s", code, errOut)
	}
	k, err := notice.NewKeyer([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := time.Parse(notice.DateLayout, f.periodStart())
	key := k.ChannelKey(notice.Tuple{SubscriptionID: subID(3), PeriodStart: ps, Kind: testKind}, notice.ChannelSMS)
	txt, rec := readProof(t, out, key, ".txt")
	var body string
	for _, r := range tw.Requests() {
		if r.To == "+14155550003" {
			body = r.Body
		}
	}
	if body == "" || string(txt) != body || !strings.Contains(body, "7.50") {
		t.Fatalf("proof .txt %q, Twilio got %q", txt, body)
	}
	sum := sha256.Sum256(txt)
	if d := f.lookupDigest(subID(3), "sms"); d != hex.EncodeToString(sum[:]) || !rec.DigestVerified || rec.Channel != "sms" {
		t.Fatalf("sha256 %x, lookup %s, record %+v", sum, d, rec)
	}
	wantPDF(t, out, key, subID(3), testKind, "7.50", stamp(*rec.Attempts[0].SentAt))
}

// A bad flag is a usage error naming it, exit 2, nothing written.
func TestProofUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"proof", "--out", "x"}, "--subscription"},
		{[]string{"proof", "--subscription", "s"}, "--out"},
		{[]string{"proof", "--subscription", "s", "--out", "x", "--channel", "fax"}, "--channel"},
		{[]string{"proof", "--subscription", "s", "--out", "x", "--period-start", "May"}, "--period-start"},
		{[]string{"proof", "--verify", "--sample", "-1"}, "--sample"},
	} {
		if code, _, errOut := f.runIn(nil, c.args...); code != 2 || !strings.Contains(errOut, c.field) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", c.args, code, errOut, c.field)
		}
	}
	if code, _, errOut := f.runIn(nil, "proof", "--subscription", "nobody", "--out", t.TempDir()); code != 1 || !strings.Contains(errOut, "no notice matches") {
		t.Fatalf("unknown subscription: exit %d, %q", code, errOut)
	}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
