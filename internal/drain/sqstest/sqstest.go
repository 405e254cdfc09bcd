// Package sqstest is a stand-in of one Amazon SQS queue that speaks the
// AWS JSON 1.0 protocol the current SDK uses (goaws speaks only the older
// query protocol), served on loopback for tests: ReceiveMessage and
// DeleteMessageBatch, answered as the API reference documents them:
//
//   - https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-json-api-responses.html
//     (POST with X-Amz-Target: AmazonSQS.<Action>, Content-Type
//     application/x-amz-json-1.0; errors as {"__type", "message"} with
//     x-amzn-query-error)
//   - https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html
//     (Messages: MessageId, ReceiptHandle, MD5OfBody, Body; the SDK checks
//     MD5OfBody)
//   - https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessageBatch.html
//     (Entries of Id and ReceiptHandle; Successful and Failed, answered
//     200 even when some fail)
//
// A received message is in flight (invisible) until it is deleted or
// Expire makes it visible again, as its visibility timeout would. A
// Queue is safe for concurrent use, its hooks too (set them by their
// methods: a child process's requests are not ordered after a plain
// write, for the race detector).
package sqstest

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Queue is one queue behind a loopback server.
type Queue struct {
	URL      string // the server's URL: the SDK's endpoint (AWS_ENDPOINT_URL_SQS)
	QueueURL string // the queue's URL, as SQS names it

	mu         sync.Mutex
	seq        int
	visible    []message
	inFlight   map[string]message // by receipt handle
	deleted    []string           // message ids, in order
	waits      []int32            // WaitTimeSeconds of each receive
	onReceive  func(q *Queue) (status int, errType string)
	failDelete func(receipt string) bool
	onDelete   func()
}

type message struct{ id, receipt, body string }

// New starts a queue's server; it stops with the test.
func New(t testing.TB) *Queue {
	q := &Queue{inFlight: map[string]message{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(q.serve))
	// The queue's URL names the server's address, known before it serves.
	q.URL = "http://" + srv.Listener.Addr().String()
	q.QueueURL = q.URL + "/000000000000/scan-events"
	srv.Start()
	t.Cleanup(srv.Close)
	return q
}

// OnReceive sets a function called (without the lock) before each
// receive is answered: a test adds messages from it (an endless queue) or
// fails the request by returning a status and an error type.
func (q *Queue) OnReceive(fn func(q *Queue) (status int, errType string)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.onReceive = fn
}

// FailDelete sets a function naming the receipt handles that
// DeleteMessageBatch reports as Failed (called with the queue locked).
func (q *Queue) FailDelete(fn func(receipt string) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failDelete = fn
}

// OnDelete sets a function called (without the lock) before a
// DeleteMessageBatch is carried out: a test blocks in it to kill the
// client between its commit and its delete.
func (q *Queue) OnDelete(fn func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.onDelete = fn
}

// Add puts a message on the queue and returns its id.
func (q *Queue) Add(body string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", q.seq)
	q.visible = append(q.visible, message{id: id, body: body})
	return id
}

// Expire makes every message in flight visible again.
func (q *Queue) Expire() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for r, m := range q.inFlight {
		delete(q.inFlight, r)
		q.visible = append(q.visible, m)
	}
}

// Deleted returns the ids of the deleted messages, in order.
func (q *Queue) Deleted() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.deleted...)
}

// Left returns how many messages are still on the queue, visible or in
// flight.
func (q *Queue) Left() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.visible) + len(q.inFlight)
}

// Waits returns the WaitTimeSeconds of each receive, in order.
func (q *Queue) Waits() []int32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]int32(nil), q.waits...)
}

func (q *Queue) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json-1.0") {
		fail(w, http.StatusBadRequest, "InvalidAction", "not an AWS JSON 1.0 request")
		return
	}
	var in struct {
		QueueURL            string `json:"QueueUrl"`
		MaxNumberOfMessages int    `json:"MaxNumberOfMessages"`
		WaitTimeSeconds     int32  `json:"WaitTimeSeconds"`
		Entries             []struct {
			ID            string `json:"Id"`
			ReceiptHandle string `json:"ReceiptHandle"`
		} `json:"Entries"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(w, http.StatusBadRequest, "InvalidParameterValue", err.Error())
		return
	}
	if in.QueueURL != q.QueueURL {
		fail(w, http.StatusBadRequest, "QueueDoesNotExist", "The specified queue does not exist.")
		return
	}
	switch r.Header.Get("X-Amz-Target") {
	case "AmazonSQS.ReceiveMessage":
		q.mu.Lock()
		onReceive := q.onReceive
		q.mu.Unlock()
		if onReceive != nil {
			if status, typ := onReceive(q); status != 0 {
				fail(w, status, typ, "injected by the test")
				return
			}
		}
		answer(w, q.receive(in.MaxNumberOfMessages, in.WaitTimeSeconds))
	case "AmazonSQS.DeleteMessageBatch":
		q.mu.Lock()
		onDelete := q.onDelete
		q.mu.Unlock()
		if onDelete != nil {
			onDelete()
		}
		out := struct {
			Successful []map[string]string `json:"Successful"`
			Failed     []map[string]any    `json:"Failed"`
		}{Successful: []map[string]string{}, Failed: []map[string]any{}}
		for _, e := range in.Entries {
			if q.delete(e.ReceiptHandle) {
				out.Successful = append(out.Successful, map[string]string{"Id": e.ID})
			} else {
				out.Failed = append(out.Failed, map[string]any{"Id": e.ID, "Code": "ReceiptHandleIsInvalid", "Message": "The input receipt handle is invalid.", "SenderFault": true})
			}
		}
		answer(w, out)
	default:
		fail(w, http.StatusBadRequest, "InvalidAction", "unknown action "+r.Header.Get("X-Amz-Target"))
	}
}

func (q *Queue) receive(n int, wait int32) map[string]any {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waits = append(q.waits, wait)
	n = min(max(n, 1), 10)
	msgs := []map[string]string{}
	for len(q.visible) > 0 && len(msgs) < n {
		m := q.visible[0]
		q.visible = q.visible[1:]
		q.seq++
		m.receipt = fmt.Sprintf("AQEB%08d%s", q.seq, m.id)
		q.inFlight[m.receipt] = m
		sum := md5.Sum([]byte(m.body))
		msgs = append(msgs, map[string]string{"MessageId": m.id, "ReceiptHandle": m.receipt, "MD5OfBody": hex.EncodeToString(sum[:]), "Body": m.body})
	}
	return map[string]any{"Messages": msgs}
}

func (q *Queue) delete(receipt string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	m, ok := q.inFlight[receipt]
	if !ok || (q.failDelete != nil && q.failDelete(receipt)) {
		return false
	}
	delete(q.inFlight, receipt)
	q.deleted = append(q.deleted, m.id)
	return true
}

func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-RequestId", "66916324-67ca-54bb-a410-3f567a7a0571")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-query-error", "AWS.SimpleQueueService."+typ+";Sender")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + typ, "message": msg})
}
