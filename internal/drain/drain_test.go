package drain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jmoiron/sqlx"

	"scan/internal/drain"
	"scan/internal/drain/sqstest"
	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/pgtest"
	_ "scan/internal/provider/registry" // the providers' formats
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

func key(i int) string { return ledgertest.Key(i) }

func msgID(i int) string { return ledgertest.MessageID(i) }

// setup returns a migrated ledger holding n claims (keys 1..n), none
// with an outcome.
func setup(t *testing.T, n int) *sqlx.DB {
	t.Helper()
	db := pgtest.New(t)
	ledgertest.Crashed(t, db, n, t0)
	return db
}

// sesEvent is an SES event record of subscription i, as event publishing
// writes it (https://docs.aws.amazon.com/ses/latest/dg/event-publishing-retrieving-sns-examples.html:
// eventType, mail.messageId, mail.tags from X-SES-MESSAGE-TAGS,
// mail.commonHeaders.messageId).
func sesEvent(i int, typ string) string {
	ev := map[string]any{
		"eventType": typ,
		"mail": map[string]any{
			"timestamp": t0.Add(time.Minute).Format(time.RFC3339Nano), "messageId": fmt.Sprintf("0102018f-%04d", i),
			"tags":          map[string][]string{"notice_key": {key(i)}, "notice_attempt": {"1"}},
			"commonHeaders": map[string]any{"messageId": "<" + msgID(i) + ">"},
		},
	}
	switch typ {
	case "Delivery":
		ev["delivery"] = map[string]any{"timestamp": t0.Add(2 * time.Minute).Format(time.RFC3339Nano), "smtpResponse": "250 2.6.0 Message received"}
	case "Bounce":
		ev["bounce"] = map[string]any{"bounceType": "Permanent", "bounceSubType": "General", "timestamp": t0.Add(2 * time.Minute).Format(time.RFC3339Nano)}
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// sns wraps an SES event in the SNS notification envelope SQS receives
// from a topic subscription without raw message delivery
// (https://docs.aws.amazon.com/sns/latest/dg/sns-message-and-json-formats.html).
func sns(event string) string {
	b, _ := json.Marshal(map[string]string{
		"Type": "Notification", "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
		"TopicArn": "arn:aws:sns:eu-west-1:123456789012:ses-events", "Message": event,
		"Timestamp": "2026-11-30T02:03:00.000Z", "SignatureVersion": "1",
	})
	return string(b)
}

func client(q *sqstest.Queue) *sqs.Client {
	return sqs.New(sqs.Options{Region: "eu-west-1", BaseEndpoint: aws.String(q.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "test-secret", "")})
}

func states(t *testing.T, db *sqlx.DB, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		r, err := ledger.Get(context.Background(), db, key(i))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(string(r.State)[:1])
	}
	return b.String()
}

// What the drain committed it deletes; an unreadable message stays in
// the queue, counted once; an irrelevant one (a subscription
// confirmation) is read as nothing and deleted; a replay changes nothing.
func TestDrainSettlesCommitsThenDeletes(t *testing.T) {
	t.Parallel()
	db := setup(t, 4)
	q := sqstest.New(t)
	var settled []string
	ids := []string{
		q.Add(sns(sesEvent(1, "Delivery"))), // enveloped
		q.Add(sesEvent(2, "Send")),          // raw message delivery
		q.Add(sns(sesEvent(3, "Bounce"))),
		q.Add(`{"Type":"SubscriptionConfirmation","Message":"You have chosen to subscribe","TopicArn":"arn:aws:sns:eu-west-1:123456789012:ses-events"}`),
	}
	bad := q.Add(`{"Type":"Notification","Message":"not an SES event"`)
	for i := 0; i < 11; i++ { // more than one receive batch
		ids = append(ids, q.Add(sns(sesEvent(1, "Delivery"))))
	}
	cfg := drain.Config{API: client(q), QueueURL: q.QueueURL, By: "sqs", Now: func() time.Time { return t0.Add(time.Hour) }}
	res, err := drain.Run(context.Background(), db, cfg, func(c ledger.Change) error {
		settled = append(settled, c.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := states(t, db, 4); got != "ssfc" {
		t.Errorf("states = %s, want ssfc", got)
	}
	if len(settled) != 3 || res.Settled != 3 {
		t.Errorf("changes %d, Settled %d; want 3", len(settled), res.Settled)
	}
	if res.Received != 16 || res.Deleted != 15 || res.Kept != 1 || res.Stop != "empty" || res.Receives != 3 {
		t.Errorf("received %d, deleted %d, kept %d, stop %q, receives %d; want 16, 15, 1, empty, 3", res.Received, res.Deleted, res.Kept, res.Stop, res.Receives)
	}
	if res.Malformed != 1 || res.Irrelevant != 1 || res.Duplicate != 11 || !slices.Equal(res.KeptIDs, []string{bad}) {
		t.Errorf("malformed %d, irrelevant %d, duplicate %d, kept %v; want 1, 1, 11, [%s]", res.Malformed, res.Irrelevant, res.Duplicate, res.KeptIDs, bad)
	}
	deleted := q.Deleted()
	slices.Sort(deleted)
	slices.Sort(ids)
	if !slices.Equal(deleted, ids) || q.Left() != 1 {
		t.Errorf("deleted %v, %d left; want every message but %s", deleted, q.Left(), bad)
	}
	// The unreadable message comes back (its visibility timeout): kept
	// again, never deleted.
	q.Expire()
	res, err = drain.Run(context.Background(), db, cfg, nil)
	if err != nil || res.Kept != 1 || res.Deleted != 0 || q.Left() != 1 {
		t.Errorf("second drain: kept %d, deleted %d, left %d, %v; want 1, 0, 1", res.Kept, res.Deleted, q.Left(), err)
	}
	for _, w := range q.Waits() {
		if w != 20 {
			t.Errorf("WaitTimeSeconds %d, want 20 (the longest long poll)", w)
		}
	}
}

// A batch whose commit fails is not deleted: it stays on the queue, and a
// later drain applies it.
func TestDrainDeletesNothingWhenTheCommitFails(t *testing.T) {
	t.Parallel()
	db := setup(t, 2)
	ctx := context.Background()
	// A deferred constraint trigger fails the transaction at COMMIT, after
	// every statement of Settle succeeded.
	for _, stmt := range []string{
		`CREATE FUNCTION refuse_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$`,
		`CREATE CONSTRAINT TRIGGER refuse_commit AFTER INSERT ON notice_evidence DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_commit()`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	q := sqstest.New(t)
	q.Add(sns(sesEvent(1, "Delivery")))
	q.Add(sesEvent(2, "Delivery"))
	cfg := drain.Config{API: client(q), QueueURL: q.QueueURL, Now: func() time.Time { return t0.Add(time.Hour) }}
	changes := 0
	res, err := drain.Run(ctx, db, cfg, func(ledger.Change) error { changes++; return nil })
	if err == nil || !strings.Contains(err.Error(), "refused at commit") || !strings.Contains(err.Error(), "none deleted") {
		t.Fatalf("err = %v, want the commit's failure", err)
	}
	if len(q.Deleted()) != 0 || q.Left() != 2 || res.Deleted != 0 || changes != 0 {
		t.Errorf("deleted %v (%d), %d left, %d changes; want none deleted, 2 left, no change", q.Deleted(), res.Deleted, q.Left(), changes)
	}
	if got := states(t, db, 2); got != "cc" {
		t.Errorf("states = %s, want cc", got)
	}
	if _, err := db.ExecContext(ctx, `DROP TRIGGER refuse_commit ON notice_evidence`); err != nil {
		t.Fatal(err)
	}
	q.Expire()
	if res, err = drain.Run(ctx, db, cfg, nil); err != nil || res.Deleted != 2 || res.Settled != 2 {
		t.Errorf("after the database is back: deleted %d, settled %d, %v; want 2, 2", res.Deleted, res.Settled, err)
	}
}

// The drain stops receiving at its deadline even when the queue never
// empties, never long-polls past it, and deletes what it received.
func TestDrainKeepsToTheDeadline(t *testing.T) {
	t.Parallel()
	db := setup(t, 1)
	q := sqstest.New(t)
	q.OnReceive(func(q *sqstest.Queue) (int, string) {
		q.Add(sns(sesEvent(1, "Delivery"))) // an endless queue
		return 0, ""
	})
	var reads atomic.Int64
	now := func() time.Time { return t0.Add(time.Duration(reads.Add(1)) * 7 * time.Second) }
	cfg := drain.Config{API: client(q), QueueURL: q.QueueURL, Now: now, Deadline: t0.Add(45 * time.Second)}
	res, err := drain.Run(context.Background(), db, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The clock is read before each receive and once per applied batch:
	// at 7s (38s left), 21s (24s left), 35s (10s left), then 49s (past it).
	if res.Stop != "deadline" || res.Receives != 3 {
		t.Errorf("stop %q after %d receives; want deadline after 3", res.Stop, res.Receives)
	}
	if res.Received != res.Deleted || q.Left() != 0 {
		t.Errorf("received %d, deleted %d, %d left; want all received deleted", res.Received, res.Deleted, q.Left())
	}
	if w := q.Waits(); !slices.Equal(w, []int32{20, 20, 10}) {
		t.Errorf("long polls %v, want [20 20 10]: none past the deadline", w)
	}
}

// A message SQS fails to delete stays, and when it comes back it changes
// nothing.
func TestDrainCountsFailedDeletes(t *testing.T) {
	t.Parallel()
	db := setup(t, 1)
	q := sqstest.New(t)
	q.Add(sns(sesEvent(1, "Delivery")))
	var fail atomic.Bool
	fail.Store(true)
	q.FailDelete(func(string) bool { return fail.Load() })
	cfg := drain.Config{API: client(q), QueueURL: q.QueueURL, Now: func() time.Time { return t0.Add(time.Hour) }}
	res, err := drain.Run(context.Background(), db, cfg, nil)
	if err != nil || res.DeleteFailed != 1 || res.Deleted != 0 || res.Settled != 1 {
		t.Fatalf("delete failed %d, deleted %d, settled %d, %v; want 1, 0, 1", res.DeleteFailed, res.Deleted, res.Settled, err)
	}
	fail.Store(false)
	q.Expire()
	res, err = drain.Run(context.Background(), db, cfg, nil)
	if err != nil || res.Deleted != 1 || res.Settled != 0 || res.Duplicate != 1 {
		t.Errorf("replay: deleted %d, settled %d, duplicate %d, %v; want 1, 0, 1", res.Deleted, res.Settled, res.Duplicate, err)
	}
}

// An SQS error stops the drain with the error, deleting nothing.
func TestDrainStopsOnQueueError(t *testing.T) {
	t.Parallel()
	db := setup(t, 1)
	q := sqstest.New(t)
	q.Add(sns(sesEvent(1, "Delivery")))
	cfg := drain.Config{API: client(q), QueueURL: q.QueueURL + "-gone"}
	_, err := drain.Run(context.Background(), db, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "QueueDoesNotExist") || len(q.Deleted()) != 0 {
		t.Errorf("err = %v, deleted %v; want QueueDoesNotExist, none", err, q.Deleted())
	}
}
