package memory

import (
	"errors"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// A container's limit leaves the binary's own pages outside the Go
// runtime's limit; a small one keeps at least half for the runtime; no
// limit stays no limit.
func TestLessReserve(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, tc := range []struct {
		limit, want uint64
	}{
		{64 * mib, 40 * mib},
		{256 * mib, 232 * mib},
		{48 * mib, 24 * mib},
		{32 * mib, 16 * mib},
	} {
		got, err := lessReserve(memlimit.Limit(tc.limit))()
		if err != nil || got != tc.want {
			t.Errorf("limit %d MiB: got %d MiB, %v; want %d MiB", tc.limit/mib, got/mib, err, tc.want/mib)
		}
	}
	none := func() (uint64, error) { return 0, memlimit.ErrNoLimit }
	if _, err := lessReserve(none)(); !errors.Is(err, memlimit.ErrNoLimit) {
		t.Errorf("no limit: err = %v, want ErrNoLimit", err)
	}
}
