package reconcile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/provider"
)

// FormatJSONL is the format of the ledger's own settlements, one JSON
// object a line (Read); every other format is a provider's name.
const FormatJSONL = "jsonl"

// Formats are the event formats ReadFormat reads: jsonl, then each
// provider's that registered one (RegisterFormat), in their order.
var Formats = []string{FormatJSONL}

// ErrNoEvent is a payload with no event type: a Decoder's error for it
// names the field it looked in.
var ErrNoEvent = errors.New("no event type")

// A Decoder reads one payload of a provider's event format into the
// settlement it proves, all of whose fields it fills but Key's validity
// and the ids' spacing (ReadFormat checks those): To "" when the event
// proves nothing (irrelevant), Kind one of ledger.EventKinds, Event
// "provider:type[/detail]" (EventName), Detail what the provider said of
// it without any address (Detail). An error is a malformed payload, and
// its text is the problem counted for it. A Decoder lives in its
// provider's package (internal/provider/<name>), which knows the format.
type Decoder func(payload []byte) (ledger.Settlement, error)

// EventName is the event of a payload of type typ from provider p:
// "provider:type", lower-case.
func EventName(p provider.Name, typ string) string { return string(p) + ":" + Lower(typ) }

var decoders = map[string]Decoder{}

// RegisterFormat makes the events of provider p readable as format
// string(p) by ReadFormat, Apply and everything built on them. The
// provider registry (internal/provider/registry) calls it for each
// provider with an event format, when the program starts; a second
// registration of a name panics.
func RegisterFormat(p provider.Name, d Decoder) {
	if _, dup := decoders[string(p)]; dup || d == nil || p == "" {
		panic(fmt.Sprintf("reconcile: RegisterFormat(%q): registered twice, or no decoder", p))
	}
	decoders[string(p)] = d
	Formats = append(Formats, string(p))
}

// DecoderOf returns format's Decoder, nil when none is registered.
func DecoderOf(format string) Decoder { return decoders[format] }

// ReadFormat calls fn with each usable settlement in r, read as format
// (one of Formats; "" is jsonl). jsonl is Read. The provider formats take
// the payloads as the provider posts them, one per line, several on a
// line, pretty-printed over many lines, or as the elements of a JSON
// array; Stats.Payloads counts them and Stats.Lines the lines of r.
// Malformed, oversized and irrelevant payloads are counted (problems with
// the line their payload starts on), never fatal; only a read error or an
// error from fn stops it. Each settlement names its claim by notice key,
// provider id or Message-ID (at least one). Memory stays bounded by
// MaxLine whatever the size of r.
//
// What each provider's events prove (everything else is irrelevant) is
// its Decoder's, documented in its package (internal/provider/<name>).
// Each settlement is classified by kind (one of ledger.EventKinds): what
// happened to the message, whatever the state it leads to; and its Detail
// holds what the provider said of it, without any e-mail address
// (cleanDetail).
func ReadFormat(r io.Reader, format string, fn func(ledger.Settlement) error) (Stats, error) {
	if format == "" || format == FormatJSONL {
		st, err := Read(r, fn)
		st.Payloads = st.Lines
		return st, err
	}
	dec, ok := decoders[format]
	if !ok {
		return Stats{}, fmt.Errorf("reconcile: unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
	}
	return ReadWith(r, dec, fn)
}

// ReadWith is ReadFormat with the Decoder of a format: a provider's
// pull API reads its answers by its own mapping this way.
func ReadWith(r io.Reader, dec Decoder, fn func(ledger.Settlement) error) (Stats, error) {
	var st Stats
	lines, err := split(r, func(line int, payload []byte, problem string, oversized bool) error {
		st.Payloads++
		switch {
		case oversized:
			st.Oversized++
			st.problem(line, problem)
			return nil
		case problem != "":
			st.Malformed++
			st.problem(line, problem)
			return nil
		}
		ev, derr := dec(payload)
		if derr != nil {
			st.Malformed++
			st.problem(line, derr.Error())
			return nil
		}
		if ev.To == "" {
			st.Irrelevant++
			return nil
		}
		if ev.Key != "" && !notice.ValidKey(ev.Key) {
			ev.Key = "" // not one of ours: match by the ids instead
		}
		ev.MessageID = notice.BareMessageID(ev.MessageID)
		ev.ProviderID = strings.TrimSpace(ev.ProviderID)
		if ev.Key == "" && ev.ProviderID == "" && ev.MessageID == "" {
			st.Malformed++
			st.problem(line, "no notice_key, provider message id or Message-ID")
			return nil
		}
		return fn(ev)
	})
	st.Lines = lines
	return st, err
}

// Lower is s trimmed and lower-cased, as event types are compared.
func Lower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Object decodes payload as a JSON object into v.
func Object(payload []byte, v any) error {
	if len(payload) == 0 || payload[0] != '{' {
		return errors.New("not a JSON object")
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return errors.New("not a JSON object")
	}
	return nil
}

// FirstString returns the first string of a JSON value that is a string
// or an array of strings (SES tags are arrays).
func FirstString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil && len(ss) > 0 {
		return ss[0]
	}
	return ""
}

// OrTime is the time in raw (ParseTime), or def when raw holds none.
func OrTime(raw json.RawMessage, def time.Time) time.Time {
	if t := ParseTime(raw); !t.IsZero() {
		return t
	}
	return def
}
