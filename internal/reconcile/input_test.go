package reconcile_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// wantField checks that err is a *reconcile.FieldError naming field with
// msg, as `scan` prints it after "scan: " (exit 2); "" wants no error.
func wantField(t *testing.T, err error, field, msg string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var fe *reconcile.FieldError
	if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(fe.Msg, msg) {
		t.Fatalf("got %v, want a FieldError %s: ...%s...", err, field, msg)
	}
}

func TestRecoveryValidate(t *testing.T) {
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		r          reconcile.Recovery
		field, msg string
		by         string // By after Validate
	}{
		{"none lost", reconcile.Recovery{NoneLost: true, Reason: "no record", By: "ops"}, "", "", "ops"},
		{"none lost with events", reconcile.Recovery{NoneLost: true, Events: "-", Reason: "r", By: "ops"}, "--none-lost", "takes no --events or --ask", ""},
		{"none lost with ask", reconcile.Recovery{NoneLost: true, Ask: "postmark", Reason: "r", By: "ops"}, "--none-lost", "takes no --events or --ask", ""},
		{"none lost, blank reason", reconcile.Recovery{NoneLost: true, Reason: " ", By: "ops"}, "--reason", "required with --none-lost", ""},
		{"none lost, no author", reconcile.Recovery{NoneLost: true, Reason: "r", By: " "}, "--by", "when $USER is not set", ""},
		{"no since", reconcile.Recovery{Events: "-", Format: reconcile.FormatJSONL}, "--since", "required", ""},
		{"no record", reconcile.Recovery{Since: since, Format: reconcile.FormatJSONL}, "--events", "(one of them)", ""},
		{"two records", reconcile.Recovery{Since: since, Events: "-", Ask: "postmark", Format: reconcile.FormatJSONL}, "--events", "(one of them)", ""},
		{"bad format", reconcile.Recovery{Since: since, Events: "-", Format: "xml"}, "--format", `"xml" is not one of jsonl`, ""},
		{"events", reconcile.Recovery{Since: since, Events: "-", Format: "ses"}, "", "", "recover"},
		{"ask, by ops", reconcile.Recovery{Since: since, Ask: "postmark", Format: reconcile.FormatJSONL, By: "ops"}, "", "", "ops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Validate()
			wantField(t, err, tc.field, tc.msg)
			if err == nil && tc.r.By != tc.by {
				t.Fatalf("By = %q, want %q", tc.r.By, tc.by)
			}
		})
	}
}

func TestSourcesValidate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		s          reconcile.Sources
		field, msg string
		format     string // Format after Validate
	}{
		{"events", reconcile.Sources{Events: "-", Format: "jsonl"}, "", "", "jsonl"},
		{"none", reconcile.Sources{Format: "jsonl"}, "--events", "required: a file of events", ""},
		{"two", reconcile.Sources{Events: "-", SQS: "http://q", Format: "jsonl"}, "--events", "give one of --events, --sqs and --ask", ""},
		{"budget without sqs", reconcile.Sources{Events: "-", Format: "jsonl", BudgetFlag: "--receive-for"}, "--receive-for", "only with --sqs", ""},
		{"old spelling named", reconcile.Sources{Ask: "postmark", BudgetFlag: "--max-duration"}, "--max-duration", "only with --sqs", ""},
		{"older-than without ask", reconcile.Sources{SQS: "http://q", OlderThanSet: true}, "--older-than", "only with --ask", ""},
		{"negative budget", reconcile.Sources{SQS: "http://q", Budget: -time.Second}, "--receive-for", "must not be negative", ""},
		{"sqs defaults to ses", reconcile.Sources{SQS: "http://q", Format: "jsonl"}, "", "", "ses"},
		{"sqs, jsonl given", reconcile.Sources{SQS: "http://q", Format: "jsonl", FormatSet: true}, "--format", `"jsonl": with --sqs, one of`, ""},
		{"sqs, sendgrid", reconcile.Sources{SQS: "http://q", Format: "sendgrid", FormatSet: true}, "", "", "sendgrid"},
		{"ask", reconcile.Sources{Ask: "postmark", OlderThanSet: true, Format: "jsonl"}, "", "", "jsonl"},
		{"bad format", reconcile.Sources{Events: "-", Format: "sparkpost"}, "--format", `"sparkpost" is not one of jsonl`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			wantField(t, err, tc.field, tc.msg)
			if err == nil && tc.s.Format != tc.format {
				t.Fatalf("Format = %q, want %q", tc.s.Format, tc.format)
			}
		})
	}
}

func TestResolutionDecision(t *testing.T) {
	key := strings.Repeat("ab", 32)
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		r          reconcile.Resolution
		field, msg string
		to         ledger.State
	}{
		{"sent", reconcile.Resolution{Key: key, Sent: true, Reason: "seen", By: "ops"}, "", "", ledger.Sent},
		{"run, not sent", reconcile.Resolution{RunID: "r1", NotSent: true, Reason: "none", By: "ops"}, "", "", ledger.Retry},
		{"no key", reconcile.Resolution{Sent: true, Reason: "r", By: "ops"}, "KEY", "exactly one notice key", ""},
		{"bad key", reconcile.Resolution{Key: "nothex", Sent: true, Reason: "r", By: "ops"}, "KEY", "exactly one notice key", ""},
		{"key and run", reconcile.Resolution{Key: key, RunID: "r1", Sent: true, Reason: "r", By: "ops"}, "KEY", "or --run RUN_ID", ""},
		{"no ruling", reconcile.Resolution{Key: key, Reason: "r", By: "ops"}, "decision", "give exactly one of --sent, --not-sent, --retry", ""},
		{"two rulings", reconcile.Resolution{Key: key, Sent: true, Retry: true, Reason: "r", By: "ops"}, "decision", "exactly one", ""},
		{"blank reason", reconcile.Resolution{Key: key, Retry: true, Reason: "\t", By: "ops"}, "--reason", "required: say why", ""},
		{"no author", reconcile.Resolution{Key: key, Retry: true, Reason: "r"}, "--by", "required when $USER is not set", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.r.Decision(at)
			wantField(t, err, tc.field, tc.msg)
			if err == nil && (d.To != tc.to || d.By != tc.r.By || !d.At.Equal(at)) {
				t.Fatalf("decision %+v, want to %s by %s at %v", d, tc.to, tc.r.By, at)
			}
		})
	}
}
