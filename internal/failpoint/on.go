//go:build failpoint

package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"scan/internal/scan"
)

// Hooks crashes the process with SIGKILL at a pass boundary, for
// the crash tests (built with -tags failpoint). SCAN_FAILPOINT is
// NAME[:N]: crash the N-th time (default 1st) the pass reaches NAME, one of
// before-claim, after-claim-commit, after-accepted, after-outcome-commit.
func Hooks() scan.Hooks {
	name, nth, _ := strings.Cut(os.Getenv("SCAN_FAILPOINT"), ":")
	n, err := strconv.Atoi(nth)
	if err != nil || n < 1 {
		n = 1
	}
	var count atomic.Int64
	crash := func(at string) {
		if at == name && count.Add(1) == int64(n) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never returns: the signal is on its way
		}
	}
	return scan.Hooks{
		BeforeClaim:        func(int) { crash("before-claim") },
		AfterClaimCommit:   func(int) { crash("after-claim-commit") },
		AfterAccepted:      func(string) { crash("after-accepted") },
		AfterOutcomeCommit: func(int) { crash("after-outcome-commit") },
	}
}
