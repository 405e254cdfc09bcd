package job_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"scan/internal/job"
	"scan/internal/ledger"
	"scan/internal/scan"
	"scan/internal/subscription"
)

// What ends a scheduler rather than one firing: a configuration error or
// a refusal, wrapped or not; a failed or cancelled pass does not.
func TestFinal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("connect: refused"), false},
		{context.Canceled, false},
		{&scan.ConfigError{Field: "rate", Msg: "bad"}, true},
		{fmt.Errorf("pass: %w", &subscription.ConfigError{Field: "--source", Msg: "no column"}), true},
		{fmt.Errorf("epoch: %w", ledger.ErrRestored), true},
	} {
		if got := job.Final(c.err); got != c.want {
			t.Errorf("Final(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
