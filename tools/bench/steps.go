package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// passStep is one step of a first pass that the SQL ceiling does not
// take, told apart in a CPU profile by the frames of a sample's stack.
type passStep struct {
	name  string
	frame *regexp.Regexp
}

// passSteps attribute each sample of scan's CPU profile to one step: the
// first whose pattern matches a frame of the sample's stack, so the more
// specific steps come first (the kept message's compression runs inside
// the dispatcher, classification inside the source read). The last one
// takes every sample left.
var passSteps = []passStep{
	{"GC (background mark, assists, sweep)", regexp.MustCompile(`runtime\.gcBgMarkWorker|runtime\.gcAssistAlloc|runtime\.bgsweep|runtime\.bgscavenge|runtime\.gcStart`)},
	{"kept message: s2 compression (issue 37)", regexp.MustCompile(`ledger\.KeepMessage|ledger\.keep$|compressMessages|klauspost/compress`)},
	{"message digest (SHA-256 of the raw message)", regexp.MustCompile(`crypto/sha256\.Sum256`)},
	{"outbox write (open O_TMPFILE, write, link, close)", regexp.MustCompile(`send\.\(\*Outbox\)`)},
	{"render + MIME (templates, quoted-printable, headers)", regexp.MustCompile(`message\.\(\*Renderer\)`)},
	{"outcome statement, client side (arrays, lib/pq, tx)", regexp.MustCompile(`ledger\.RecordOutcomes|scan\.\(\*recorder\)`)},
	{"keys + cancel token (HMAC-SHA256)", regexp.MustCompile(`scan\.\(\*Pass\)\.derive|notice\.\(\*Keyer\)`)},
	{"claim statement, client side (arrays, lib/pq, tx)", regexp.MustCompile(`scan\.\(\*Pass\)\.(claimPicked|insertPicked|claim)$|ledger\.Insert`)},
	{"classification + validation", regexp.MustCompile(`scan\.\(\*Pass\)\.(classify|validate)`)},
	{"source read (pages, row decoding)", regexp.MustCompile(`scan\.\(\*Pass\)\.readPage|subscription\.`)},
	{"planner (plan.Offer, Pick)", regexp.MustCompile(`scan/internal/plan\.`)},
	{"rate leases (budget, notice_rate)", regexp.MustCompile(`budget\.|ledger\.Rate`)},
	{"dispatcher (schedule, finish, channels)", regexp.MustCompile(`send\.\(\*Dispatcher\)`)},
	{"rest of the pass (produce, stages, observe)", regexp.MustCompile(`scan/internal/`)},
	{"Go scheduler, other runtime", regexp.MustCompile(`.`)},
}

// traceValue is the sample value that opens a stack in `go tool pprof
// -traces` output ("      10ms   runtime.memmove").
var traceValue = regexp.MustCompile(`^\s*([0-9.]+)(ns|us|ms|s)\s+(\S.*)$`)

// stepTimes reads `go tool pprof -traces` output and returns each step's
// CPU time, in passSteps' order, and the profile's total.
func stepTimes(traces string) (steps []time.Duration, total time.Duration) {
	steps = make([]time.Duration, len(passSteps))
	blocks := strings.Split(traces, "-----------+-------------------------------------------------------")
	for _, block := range blocks[1:] {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		m := traceValue.FindStringSubmatch(lines[0])
		if m == nil {
			continue
		}
		v, err := time.ParseDuration(m[1] + m[2])
		if err != nil {
			continue
		}
		frames := append([]string{m[3]}, lines[1:]...)
		total += v
		for i, st := range passSteps {
			if matchesAny(st.frame, frames) {
				steps[i] += v
				break
			}
		}
	}
	return steps, total
}

func matchesAny(re *regexp.Regexp, frames []string) bool {
	for _, f := range frames {
		if re.MatchString(strings.TrimSpace(f)) {
			return true
		}
	}
	return false
}

// printSteps prints where the scan process's CPU went in a pass of n
// notices, step by step, in us a notice (docs/BENCHMARKS.md, issue 39's
// "where the distance goes").
func printSteps(ctx context.Context, w io.Writer, goBin, scanBin, prof string, n int) error {
	out, err := exec.CommandContext(ctx, goBin, "tool", "pprof", "-traces", scanBin, prof).Output()
	if err != nil {
		return err
	}
	steps, total := stepTimes(string(out))
	fmt.Fprintf(w, "Where the scan process's CPU goes (profile %.2f s, %d notices):\n\n| step | CPU | us a notice |\n|---|---|---|\n", total.Seconds(), n)
	for i, st := range passSteps {
		fmt.Fprintf(w, "| %s | %.2f s | %.1f |\n", st.name, steps[i].Seconds(), steps[i].Seconds()/float64(n)*1e6)
	}
	fmt.Fprintln(w)
	return nil
}
