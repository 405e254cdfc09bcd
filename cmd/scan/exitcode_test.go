package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"scan/internal/ask"
	"scan/internal/drain"
	"scan/internal/proof"
	"scan/internal/receive"
)

// A configuration error of ask, drain, receive or proof is exit 2 with
// its own "field: message", so that no call site wraps it.
func TestConfigErrorsOfTheUseCasesAreExitTwo(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&ask.ConfigError{Field: "SENDGRID_API_KEY", Msg: "required"},
		&drain.ConfigError{Field: "--sqs", Msg: "not a queue URL"},
		&receive.ConfigError{Field: "SNS_TOPIC_ARNS", Msg: "empty"},
		&proof.UsageError{Field: "--sample", Msg: "must be 0 (every notice) or more"},
	} {
		var stderr bytes.Buffer
		e := &env{getenv: func(string) string { return "" }, stderr: &stderr, stdout: io.Discard}
		code := exitCode(e, fmt.Errorf("wrapped: %w", err))
		if want := "scan: wrapped: " + err.Error() + "\n"; code != exitUsage || stderr.String() != want {
			t.Errorf("%T: exit %d, %q; want 2, %q", err, code, stderr.String(), want)
		}
		if strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%T: not one line: %q", err, stderr.String())
		}
	}
}
