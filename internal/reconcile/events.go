// Package reconcile reads provider events (our own JSON lines, or the
// payloads a provider posts, read by the Decoder its package registers:
// RegisterFormat) and turns them
// into evidence about one attempt of a notice (the attempt the message
// carried beside its key, when the provider echoes it): an event that
// proves the provider accepted a message settles its claim as sent
// (failed for a permanent bounce); an explicit rejection before sending
// settles it as retry (failed when the provider names its suppression
// list), and overrules an acceptance of the same attempt. What
// the provider said of each event (a response, a bounce code) is kept as
// its detail, without any e-mail address (cleanDetail).
// It reads any size of file in bounded memory and never stops for one bad
// line. Apply names each event's kind and applies the events to the
// ledger (ledger.Settle, which also keeps them as evidence), a batch per
// transaction.
package reconcile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// MaxLine is the longest event line accepted, in bytes; a longer line is
// rejected (with its line number) and skipped.
const MaxLine = 1 << 20

// Event is one provider event. Only MessageID and Event are required.
// Timestamp, when present, is when the provider saw the event: an RFC 3339
// string or a Unix time in seconds (or milliseconds), as providers send
// it; any other form is ignored rather than rejecting the line. Attempt,
// when present (a positive integer, or a string of one), is the attempt
// the message carried (notice.Notice.Attempt); anything else is ignored and
// the event is then matched to an attempt by its time. Detail, when
// present, is what the provider said of it (a response, a bounce code),
// kept with the evidence as cleanDetail leaves it: no e-mail address, at
// most MaxDetail bytes on one line.
type Event struct {
	MessageID string    `json:"message_id"`
	Event     string    `json:"event"`
	Timestamp time.Time `json:"timestamp"`
	Attempt   int       `json:"attempt"`
	Detail    string    `json:"detail"`
}

// AttemptNumber reads an attempt number a provider echoed under
// notice.AttemptField (a jsonl event, our own format, carries it as
// "attempt"): a positive integer as a JSON number or string, or the first
// of an array of strings (SES tags).
// Anything else is 0, unknown.
func AttemptNumber(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil && n > 0 {
		return n
	}
	if a, err := strconv.Atoi(strings.TrimSpace(FirstString(raw))); err == nil && a > 0 {
		return a
	}
	return 0
}

// UnmarshalJSON decodes an event, reading its timestamp leniently.
func (e *Event) UnmarshalJSON(b []byte) error {
	var raw struct {
		MessageID string          `json:"message_id"`
		Event     string          `json:"event"`
		Timestamp json.RawMessage `json:"timestamp"`
		Attempt   json.RawMessage `json:"attempt"`
		Detail    json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var text string
	_ = json.Unmarshal(raw.Detail, &text) // not a string: no detail
	*e = Event{MessageID: raw.MessageID, Event: raw.Event, Timestamp: ParseTime(raw.Timestamp), Attempt: AttemptNumber(raw.Attempt),
		Detail: text}
	return nil
}

// ParseTime reads an RFC 3339 string or a Unix time in seconds (values
// above 1e11 are taken as milliseconds); anything else is the zero time.
func ParseTime(raw json.RawMessage) time.Time {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s)); err == nil {
			return t.UTC()
		}
		return time.Time{}
	}
	var num json.Number
	if json.Unmarshal(raw, &num) != nil {
		return time.Time{}
	}
	if n, err := num.Int64(); err == nil {
		switch {
		case n <= 0:
			return time.Time{}
		case n > 1e11:
			return time.UnixMilli(n).UTC()
		}
		return time.Unix(n, 0).UTC()
	}
	f, err := num.Float64()
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		return time.Time{}
	}
	if f > 1e11 {
		f /= 1000
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// Settles reports what a provider event proves about its claim: Sent for
// events that can only follow acceptance, Retry for an explicit rejection
// before acceptance, and "" for events that prove nothing.
func Settles(event string) ledger.State {
	switch strings.ToLower(strings.TrimSpace(event)) {
	case "accepted", "delivered", "deferred", "bounced", "bounce", "complained", "complaint", "opened", "open", "clicked", "sent", "processed":
		return ledger.Sent
	case "rejected", "dropped":
		return ledger.Retry
	}
	return ""
}

// Problem is one line that could not be used.
type Problem struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Stats counts what the reader saw.
type Stats struct {
	Lines      int       `json:"lines"`
	Payloads   int       `json:"payloads"` // events read; Lines for jsonl
	Malformed  int       `json:"malformed"`
	Oversized  int       `json:"oversized"`
	Irrelevant int       `json:"irrelevant"` // events that prove nothing
	Problems   []Problem `json:"problems,omitempty"`
}

const maxProblems = 100

func (s *Stats) problem(line int, reason string) {
	if len(s.Problems) < maxProblems {
		s.Problems = append(s.Problems, Problem{line, reason})
	}
}

// Read calls fn with each usable settlement in r, in order. Malformed,
// oversized and irrelevant lines are counted, never fatal; only a read
// error or an error from fn stops it. Memory stays bounded by MaxLine
// whatever the size of r.
func Read(r io.Reader, fn func(ledger.Settlement) error) (Stats, error) {
	var st Stats
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		line, tooLong, err := readLine(br, buf[:0])
		buf = line
		if err == io.EOF && len(line) == 0 && !tooLong {
			return st, nil
		}
		if err != nil && err != io.EOF {
			return st, fmt.Errorf("read events: line %d: %w", n, err)
		}
		st.Lines++
		switch {
		case tooLong:
			st.Oversized++
			st.problem(n, fmt.Sprintf("line longer than %d bytes", MaxLine))
		case len(bytes.TrimSpace(line)) == 0:
			st.Lines--
		default:
			var ev Event
			if jerr := json.Unmarshal(line, &ev); jerr != nil {
				st.Malformed++
				st.problem(n, "not a JSON object")
				break
			}
			id := notice.BareMessageID(ev.MessageID)
			if id == "" || ev.Event == "" {
				st.Malformed++
				st.problem(n, "message_id and event are required")
				break
			}
			to := Settles(ev.Event)
			if to == "" {
				st.Irrelevant++
				break
			}
			if ferr := fn(ledger.Settlement{MessageID: id, To: to, Event: strings.ToLower(strings.TrimSpace(ev.Event)), At: ev.Timestamp, Attempt: ev.Attempt,
				Detail: cleanDetail(ev.Detail)}); ferr != nil {
				return st, ferr
			}
		}
		if err == io.EOF {
			return st, nil
		}
	}
}

// readLine reads one line into buf, up to MaxLine bytes; the rest of a
// longer line is discarded and tooLong is set.
func readLine(br *bufio.Reader, buf []byte) (line []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			return buf, tooLong, err
		}
		if !tooLong {
			if len(buf)+len(chunk) > MaxLine {
				tooLong = true
				buf = buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if !isPrefix {
			return buf, tooLong, nil
		}
	}
}
