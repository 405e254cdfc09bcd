package senders

import (
	"slices"
	"testing"
)

func TestList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, provider string
		want          []string // nil: refused
	}{
		{"smtp", "none", []string{"smtp"}},
		{"ses", "none", []string{"ses"}}, // a single name, as it always was
		{"ses,smtp", "ses", []string{"ses", "smtp"}},
		{" ses , smtp ", "ses", []string{"ses", "smtp"}},
		{"smtp,outbox", "postmark", []string{"smtp", "outbox"}},
		{"ses,smtp", "none", nil},
		{"ses,smtp", "sendgrid", nil},
		{"smtp,smtp", "none", nil},
		{"ses,", "ses", nil},
		{"pigeon", "none", nil},
		{"", "none", nil},
	} {
		got, err := List(tc.raw, tc.provider)
		if (err != nil) != (tc.want == nil) || (err == nil && !slices.Equal(got, tc.want)) {
			t.Errorf("List(%q, %q) = %q, %v; want %q", tc.raw, tc.provider, got, err, tc.want)
		}
	}
}
