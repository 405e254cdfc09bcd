package usage_test

import (
	"errors"
	"fmt"
	"testing"

	"scan/internal/usage"
)

func TestErrorNamesTheFieldAndIsFoundWrapped(t *testing.T) {
	err := fmt.Errorf("scan run: %w", usage.Errorf("--shard", "%q is not I/N", "3"))
	var ue *usage.Error
	if !errors.As(err, &ue) || ue.Field != "--shard" || ue.Msg != `"3" is not I/N` {
		t.Fatalf("errors.As: %v %+v", errors.As(err, &ue), ue)
	}
	if got, want := ue.Error(), `--shard: "3" is not I/N`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}
