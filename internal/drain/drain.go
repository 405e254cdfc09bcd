// Package drain empties an Amazon SQS queue of provider events into the
// ledger (`scan reconcile --sqs`): SES events that SNS delivered to the
// queue, enveloped or as raw message delivery. Each receive batch is read
// by package reconcile and applied by ledger.Settle, the one set of rules
// every source of evidence goes through, and a message is deleted from
// the queue only once what it said is committed. A message it cannot read
// is never deleted: the queue's redrive policy moves it to its dead-letter
// queue after its maxReceiveCount, where an operator can look at it.
//
// What the drain may lose, and why it loses nothing: a message deleted is
// committed; a message committed but not deleted (the process died, the
// delete failed) comes back after its visibility timeout and is applied
// again, which ledger.Settle counts as a duplicate and changes nothing.
package drain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/provider"
	"scan/internal/reconcile"
)

// API is the part of the SQS client the drain uses; *sqs.Client
// implements it.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// MaxWait is the longest long poll SQS allows (ReceiveMessage
// WaitTimeSeconds, 0 to 20 seconds), and Config.Wait's default.
const MaxWait = 20 * time.Second

// DefaultBudget is how long `scan reconcile --sqs` receives by default
// (Deadline, --receive-for): a little less than the CronJob's 5-minute
// period, so that one drain ends before the next is due
// (concurrencyPolicy: Forbid would skip it).
const DefaultBudget = 4 * time.Minute

// MaxBatch is the most messages one ReceiveMessage returns and one
// DeleteMessageBatch deletes (MaxNumberOfMessages, 1 to 10).
const MaxBatch = 10

// maxKeptIDs bounds Result.KeptIDs.
const maxKeptIDs = 100

// Config configures Run. QueueURL and API are required; the zero value of
// every other field has the meaning its comment gives.
type Config struct {
	API      API    // the SQS client
	QueueURL string // the queue's URL, as SQS gives it
	Format   string // the events' format (reconcile.Formats); "" is ses
	By       string // recorded as the author of each change; "" is none
	// Now is the clock: read before each receive to keep to Deadline, and
	// once per applied batch as the changes' time. nil is time.Now.
	Now func() time.Time
	// Deadline is when the drain stops receiving (`--max-duration`): a
	// long poll never outlasts it, and what was received before it is
	// applied, committed and deleted. Zero: no deadline; the drain stops
	// when the queue is empty.
	Deadline time.Time
	// Wait is one receive's long poll. Zero is MaxWait; more is refused.
	Wait time.Duration
}

// Result is what Run did. The embedded reconcile.Result counts the
// events of the messages it applied, as `scan reconcile` counts a file's.
type Result struct {
	reconcile.Result
	Receives     int      // ReceiveMessage calls
	Received     int      // messages received (a message received twice counts twice)
	Deleted      int      // messages deleted after their events were committed
	Kept         int      // distinct unreadable messages left in the queue for its redrive policy
	KeptIDs      []string // their SQS message ids, at most 100
	DeleteFailed int      // committed messages SQS failed to delete: they come back, and change nothing
	// Stop says why the drain stopped: "empty" (a receive returned no
	// message) or "deadline" (Config.Deadline was reached).
	Stop string
}

// Run receives batches from the queue until a receive returns none or
// the deadline is reached; each batch's readable messages are applied in
// one go through reconcile.Apply (committed) and only then deleted with
// DeleteMessageBatch. changed, when not nil, is called with each change
// once it is committed. An error from the queue, the ledger or changed
// stops Run, and nothing of the batch in hand is deleted unless it was
// committed; the error wraps the cause. A cancelled ctx stops it between
// requests with ctx's error. Run is not safe for concurrent use with the
// same Result, but several drains may run against one queue and one
// ledger (each message goes to one receiver at a time, and Settle is
// idempotent).
func Run(ctx context.Context, db *sqlx.DB, cfg Config, changed func(ledger.Change) error) (Result, error) {
	if err := cfg.fill(); err != nil {
		return Result{}, err
	}
	res := Result{Result: reconcile.Result{Events: map[ledger.EventKind]int{}, Tally: map[reconcile.Tally]int{}}}
	kept := map[string]bool{}
	for {
		wait, ok := cfg.wait()
		if !ok {
			res.Stop = "deadline"
			return res, nil
		}
		msgs, err := cfg.receive(ctx, wait)
		res.Receives++
		if err != nil {
			return res, err
		}
		if len(msgs) == 0 {
			res.Stop = "empty"
			return res, nil
		}
		res.Received += len(msgs)
		if err := cfg.batch(ctx, db, msgs, &res, kept, changed); err != nil {
			return res, err
		}
	}
}

// fill checks cfg and fills its defaults.
func (cfg *Config) fill() error {
	switch {
	case cfg.API == nil:
		return errors.New("drain: Config.API is nil")
	case cfg.QueueURL == "":
		return errors.New("drain: Config.QueueURL is empty")
	case cfg.Wait < 0 || cfg.Wait > MaxWait:
		return fmt.Errorf("drain: Config.Wait %v is not between 0 and %v", cfg.Wait, MaxWait)
	}
	if cfg.Format == "" {
		cfg.Format = string(provider.SES)
	}
	if cfg.Format == reconcile.FormatJSONL {
		return errors.New("drain: Config.Format jsonl is not a provider's format")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Wait == 0 {
		cfg.Wait = MaxWait
	}
	return nil
}

// wait returns the long poll of the next receive: Wait, or what is left
// of the deadline in whole seconds; ok is false once the deadline is
// reached.
func (cfg *Config) wait() (time.Duration, bool) {
	if cfg.Deadline.IsZero() {
		return cfg.Wait, true
	}
	left := cfg.Deadline.Sub(cfg.Now())
	if left <= 0 {
		return 0, false
	}
	return min(cfg.Wait, left.Truncate(time.Second)), true
}

// receive long-polls one batch.
func (cfg *Config) receive(ctx context.Context, wait time.Duration) ([]types.Message, error) {
	out, err := cfg.API.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(cfg.QueueURL),
		MaxNumberOfMessages: MaxBatch,
		WaitTimeSeconds:     int32(wait / time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	return out.Messages, nil
}

// batch applies the readable messages of one receive, commits, and
// deletes them; unreadable ones are counted and left in the queue.
func (cfg *Config) batch(ctx context.Context, db *sqlx.DB, msgs []types.Message, res *Result, kept map[string]bool, changed func(ledger.Change) error) error {
	var body strings.Builder
	var done []types.Message
	for _, m := range msgs {
		b := aws.ToString(m.Body)
		if st, ok := cfg.readable(b); !ok {
			res.keep(aws.ToString(m.MessageId), st, cfg.Format, kept)
			continue
		}
		body.WriteString(b)
		body.WriteByte('\n')
		done = append(done, m)
	}
	if len(done) == 0 {
		return nil
	}
	r, err := reconcile.Apply(ctx, db, strings.NewReader(body.String()),
		reconcile.Options{Format: cfg.Format, By: cfg.By, Now: cfg.Now, BatchSize: reconcile.DefaultBatchSize}, changed)
	res.add(r)
	if err != nil {
		return fmt.Errorf("apply %d messages (none deleted): %w", len(done), err)
	}
	return cfg.delete(ctx, done, res)
}

// readable reports whether every payload of a message's body can be read
// (irrelevant events, such as a subscription confirmation, are readable:
// they are applied as nothing and deleted), with what the reader saw.
func (cfg *Config) readable(body string) (reconcile.Stats, bool) {
	st, err := reconcile.ReadFormat(strings.NewReader(body), cfg.Format, func(ledger.Settlement) error { return nil })
	return st, err == nil && st.Payloads > 0 && st.Malformed == 0 && st.Oversized == 0
}

// keep counts an unreadable message the first time it is received: as
// Kept, and its payloads as malformed or oversized (a body with no
// payload at all is one malformed payload), as `scan reconcile` counts a
// file's.
func (res *Result) keep(id string, st reconcile.Stats, format string, kept map[string]bool) {
	if kept[id] {
		return
	}
	kept[id] = true
	res.Kept++
	if len(res.KeptIDs) < maxKeptIDs {
		res.KeptIDs = append(res.KeptIDs, id)
	}
	bad := st.Malformed + st.Oversized
	if bad == 0 {
		st.Malformed, st.Payloads, bad = 1, max(st.Payloads, 1), 1
	}
	res.Lines += max(st.Lines, 1)
	res.Payloads += st.Payloads
	res.Malformed += st.Malformed
	res.Oversized += st.Oversized
	res.Irrelevant += st.Irrelevant
	res.Tally[reconcile.Tally{Provider: format, Event: ledger.KindOther, Result: reconcile.ResultMalformed}] += bad
}

// delete deletes committed messages, one DeleteMessageBatch per MaxBatch.
func (cfg *Config) delete(ctx context.Context, msgs []types.Message, res *Result) error {
	for len(msgs) > 0 {
		n := min(len(msgs), MaxBatch)
		entries := make([]types.DeleteMessageBatchRequestEntry, n)
		for i, m := range msgs[:n] {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		out, err := cfg.API.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(cfg.QueueURL), Entries: entries})
		if err != nil {
			return fmt.Errorf("sqs delete %d committed messages (they will come back and change nothing): %w", n, err)
		}
		res.Deleted += len(out.Successful)
		res.DeleteFailed += len(out.Failed)
		msgs = msgs[n:]
	}
	return nil
}

// add counts one applied batch.
func (res *Result) add(r reconcile.Result) {
	res.Lines += r.Lines
	res.Payloads += r.Payloads
	res.Malformed += r.Malformed
	res.Oversized += r.Oversized
	res.Irrelevant += r.Irrelevant
	res.Settled += r.Settled
	res.Overruled += r.Overruled
	res.Unknown += r.Unknown
	res.Unchanged += r.Unchanged
	res.Duplicate += r.Duplicate
	res.Stale += r.Stale
	for k, n := range r.Events {
		res.Events[k] += n
	}
	for k, n := range r.Tally {
		res.Tally[k] += n
	}
}
