package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"scan/internal/drain/sqstest"
	"scan/internal/ledger"
	"scan/internal/notice"
)

// claimN records n claims of this fixture's subscriptions 1..n without
// sending anything: a pass that died after claiming.
func (f *fixture) claimN(n int) {
	f.t.Helper()
	ps, _ := time.Parse(notice.DateLayout, f.periodStart())
	now := time.Now().UTC().Add(-time.Hour)
	cs := make([]ledger.Claim, n)
	for i := range cs {
		id := subID(i + 1)
		cs[i] = ledger.Claim{Key: f.key(id, 0, testSecret), Tuple: notice.Tuple{SubscriptionID: id, Kind: testKind, PeriodStart: ps},
			RenewsAt: f.renews, WindowClosesAt: f.renews.Add(-24 * time.Hour), Domain: "example.com", MessageID: f.msgID(id)}
	}
	if won, err := ledger.Insert(context.Background(), f.db, ledger.ClaimOptions{State: ledger.Claimed, Now: now, RunID: "crashed"}, cs); err != nil || len(won) != n {
		f.t.Fatalf("claim %d: won %d, %v", n, len(won), err)
	}
}

// sqsEnv is the child's environment for the SQS stand-in q: the SDK's
// standard variables, and nothing of this machine's AWS setup.
func (f *fixture) sqsEnv(q *sqstest.Queue, extra ...string) []string {
	return f.env(append([]string{
		"AWS_REGION=eu-west-1",
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
		"AWS_ENDPOINT_URL_SQS=" + q.URL,
		"AWS_CONFIG_FILE=/nonexistent",
		"AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
		"AWS_EC2_METADATA_DISABLED=true",
	}, extra...)...)
}

// sesDelivery is an SES Delivery event of subscription i in its SNS
// envelope, as event publishing to an SNS topic delivers it to SQS
// (https://docs.aws.amazon.com/ses/latest/dg/event-publishing-retrieving-sns-examples.html,
// https://docs.aws.amazon.com/sns/latest/dg/sns-message-and-json-formats.html).
func (f *fixture) sesDelivery(i int) string {
	id := subID(i)
	ev := fmt.Sprintf(`{"eventType":"Delivery","mail":{"timestamp":%q,"messageId":"0102018f-%04d","tags":{"notice_key":[%q],"notice_attempt":["1"]},"commonHeaders":{"messageId":"<%s>"}},"delivery":{"timestamp":%q,"smtpResponse":"250 2.6.0 Message received"}}`,
		time.Now().UTC().Add(-50*time.Minute).Format(time.RFC3339Nano), i, f.key(id, 0, testSecret), f.msgID(id), time.Now().UTC().Add(-49*time.Minute).Format(time.RFC3339Nano))
	b, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": fmt.Sprintf("sns-%d", i), "TopicArn": "arn:aws:sns:eu-west-1:123456789012:ses-events", "Message": ev})
	return string(b)
}

// `scan reconcile --sqs`: the real binary drains the queue through the
// SDK, settles what the events prove, deletes those messages, keeps the
// unreadable one, and says so in its summary.
func TestReconcileSQSDrainsTheQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, "")
	f.claimN(3)
	q := sqstest.New(t)
	q.Add(f.sesDelivery(1))
	q.Add(f.sesDelivery(2))
	bad := q.Add(`{"Type":"Notification","Message":"{\"eventType\":"`)
	r := f.scan(f.sqsEnv(q), "reconcile", "--sqs", q.QueueURL, "--max-duration", "1m")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, tail(r.stderr))
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var sum struct {
		Format    string         `json:"format"`
		Settled   int            `json:"settled"`
		Malformed int            `json:"malformed"`
		SQS       map[string]any `json:"sqs"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("summary: %v: %q", err, r.stdout)
	}
	if len(lines) != 3 || sum.Format != "ses" || sum.Settled != 2 || sum.Malformed != 1 ||
		sum.SQS["deleted"] != 2.0 || sum.SQS["kept"] != 1.0 || sum.SQS["stop"] != "empty" {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "SQS message "+bad+" kept") {
		t.Errorf("stderr does not name the kept message:\n%s", tail(r.stderr))
	}
	if c := f.counts(); c[ledger.Sent] != 2 || c[ledger.Claimed] != 1 {
		t.Errorf("states %v, want 2 sent, 1 claimed", c)
	}
	if len(q.Deleted()) != 2 || q.Left() != 1 {
		t.Errorf("deleted %v, %d left", q.Deleted(), q.Left())
	}
}

// Bad command lines of the SQS drain and of --ask: exit 2, naming the
// flag or variable, before any request or connection.
func TestReconcileSourcesUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	q := sqstest.New(t)
	for _, tc := range []struct {
		args  []string
		env   []string
		field string
	}{
		{[]string{"--sqs", q.QueueURL, "--events", "-"}, nil, "--events"},
		{[]string{"--sqs", q.QueueURL, "--ask", "postmark"}, nil, "--events"},
		{[]string{"--sqs", "not a url"}, nil, "--sqs"},
		{[]string{"--sqs", "https://sqs.eu-west-1.amazonaws.com/"}, nil, "--sqs"},
		{[]string{"--sqs", q.QueueURL, "--max-duration", "-1s"}, nil, "--max-duration"},
		{[]string{"--sqs", q.QueueURL, "--format", "jsonl"}, nil, "--format"},
		{[]string{"--sqs", q.QueueURL}, []string{"AWS_ENDPOINT_URL_SQS=ftp://x"}, "AWS_ENDPOINT_URL_SQS"},
		{[]string{"--sqs", q.QueueURL}, []string{"AWS_REGION="}, "AWS_REGION"},
		{[]string{"--events", "-", "--max-duration", "1m"}, nil, "--max-duration"},
		{[]string{"--events", "-", "--older-than", "1m"}, nil, "--older-than"},
		{[]string{"--ask", "ses"}, nil, "--ask"},
		{[]string{"--ask", "nosuch"}, nil, "--ask"},
		{[]string{"--ask", "postmark", "--older-than", "-1m"}, nil, "--older-than"},
		{[]string{"--ask", "postmark"}, []string{"POSTMARK_SERVER_TOKEN="}, "POSTMARK_SERVER_TOKEN"},
		{[]string{"--ask", "mailgun"}, []string{"MAILGUN_API_KEY=k"}, "MAILGUN_DOMAIN"},
		{[]string{"--ask", "sendgrid"}, nil, "SENDGRID_API_KEY"},
		{[]string{"--ask", "postmark"}, []string{"POSTMARK_SERVER_TOKEN=t", "POSTMARK_API_URL=ftp://x"}, "POSTMARK_API_URL"},
		{[]string{"--ask", "postmark"}, []string{"POSTMARK_SERVER_TOKEN=t"}, "provider"},
		{[]string{"--ask", "sendgrid"}, []string{"SENDGRID_API_KEY=k"}, "provider"},
	} {
		var stdout, stderr bytes.Buffer
		env := append(f.sqsEnv(q, "AWS_CONFIG_FILE=/nonexistent"), tc.env...)
		code := run(context.Background(), append([]string{"reconcile"}, tc.args...), getenvOf(env), strings.NewReader(""), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.field) || stdout.Len() != 0 {
			t.Errorf("%v %v: exit %d, stderr %q, stdout %q; want exit 2 naming %s", tc.args, tc.env, code, stderr.String(), stdout.String(), tc.field)
		}
	}
	if n := len(q.Waits()); n != 0 {
		t.Errorf("%d receives; want none", n)
	}
}

// getenvOf is a KEY=VALUE list as run's getenv; later entries win.
func getenvOf(env []string) func(string) string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// `scan reconcile --ask mailgun`: the real binary asks the Events API (a
// loopback stand-in answering as the reference documents it:
// https://documentation.mailgun.com/docs/mailgun/api-reference/openapi-final/tag/Events)
// about each claim; the delivered one is settled sent, the one Mailgun
// has no record of an hour after its claim becomes retry.
func TestReconcileAskMailgun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	f.claimN(2)
	delivered := f.msgID(subID(1))
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "api" || pass != "key-test" || r.URL.Path != "/v3/n.example.com/events" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		asked.Add(1)
		items := []any{}
		if r.URL.Query().Get("message-id") == delivered && r.URL.Query().Get("page") == "" {
			items = append(items, map[string]any{"event": "delivered", "id": "G9Bn5sl1TC6dwOMl", "timestamp": float64(time.Now().Add(-50 * time.Minute).Unix()),
				"message":         map[string]any{"headers": map[string]string{"message-id": delivered}},
				"user-variables":  map[string]string{"notice_key": f.key(subID(1), 0, testSecret), "notice_attempt": "1"},
				"delivery-status": map[string]any{"code": 250, "message": "OK"}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "paging": map[string]string{"next": "http://" + r.Host + r.URL.Path + "?" + r.URL.RawQuery + "&page=2"}})
	}))
	t.Cleanup(srv.Close)
	r := f.scan(f.env("MAILGUN_API_KEY=key-test", "MAILGUN_DOMAIN=n.example.com", "MAILGUN_API_URL="+srv.URL), "reconcile", "--ask", "mailgun", "--older-than", "1m")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, tail(r.stderr))
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("summary: %v: %q", err, r.stdout)
	}
	if sum["asked"] != 2.0 || sum["answered"] != 1.0 || sum["not_found"] != 1.0 || sum["settled"] != 2.0 {
		t.Errorf("summary %v", sum)
	}
	rows := f.rows()
	if rows[subID(1)].State != ledger.Sent || rows[subID(2)].State != ledger.Retry {
		t.Errorf("states %v", f.counts())
	}
	if strings.Contains(r.stderr, "key-test") {
		t.Error("the API key was printed")
	}
}

// SIGKILL between the commit and the delete: the messages come back after
// their visibility timeout, and the next drain applies them as duplicates
// (nothing changes) and deletes them.
func TestReconcileSQSKilledBeforeTheDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, "")
	f.claimN(3)
	q := sqstest.New(t)
	for i := 1; i <= 3; i++ {
		q.Add(f.sesDelivery(i))
	}
	deleting := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var block atomic.Bool
	block.Store(true)
	q.OnDelete(func() {
		if !block.Load() {
			return
		}
		select {
		case deleting <- struct{}{}:
		default:
		}
		<-release
	})
	c := f.start(f.sqsEnv(q), "reconcile", "--sqs", q.QueueURL)
	select {
	case <-deleting:
	case <-time.After(2 * time.Minute):
		c.kill()
		t.Fatalf("the drain never deleted\nstderr:\n%s", tail(c.wait().stderr))
	}
	c.kill()
	if r := c.wait(); !r.killed {
		t.Fatalf("exit %d, not killed", r.code)
	}
	// What it had committed stays: all three are sent, none deleted.
	if n := f.counts()[ledger.Sent]; n != 3 || len(q.Deleted()) != 0 {
		t.Fatalf("%d sent, deleted %v; want 3 sent, none deleted", n, q.Deleted())
	}
	block.Store(false)
	q.Expire()
	r := f.scan(f.sqsEnv(q), "reconcile", "--sqs", q.QueueURL)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var sum struct {
		Settled   int            `json:"settled"`
		Duplicate int            `json:"duplicate"`
		SQS       map[string]any `json:"sqs"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); r.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\nstderr:\n%s", r.code, err, tail(r.stderr))
	}
	if sum.Settled != 0 || sum.Duplicate != 3 || sum.SQS["deleted"] != 3.0 || q.Left() != 0 {
		t.Errorf("replay: %s", lines[len(lines)-1])
	}
}

// An account whose SendGrid key cannot read Email Logs (HTTP 403): exit 2
// with a message that says so, nothing written.
func TestReconcileAskSendGridWithoutEmailLogs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, "")
	f.claimN(1)
	f.setPolicy(testPolicy + "provider: sendgrid\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"errors":[{"field":null,"message":"access forbidden"}]}`))
	}))
	t.Cleanup(srv.Close)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"reconcile", "--ask", "sendgrid", "--older-than", "1m"},
		f.getenv("SENDGRID_API_KEY=SG.test-key", "SENDGRID_API_URL="+srv.URL), strings.NewReader(""), &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "Email Logs") || strings.Contains(stderr.String(), "SG.test-key") {
		t.Errorf("exit %d, stderr %q; want exit 2 saying the account lacks Email Logs", code, stderr.String())
	}
	if c := f.counts(); c[ledger.Claimed] != 1 {
		t.Errorf("states %v, want the claim untouched", c)
	}
}
