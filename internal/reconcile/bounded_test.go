package reconcile_test

import (
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// eventStream is a provider event file generated on the fly, never held
// in memory or written to disk: JSON lines, mostly events that settle a
// claim, some that prove nothing, a rare malformed one, and every
// bigEvery lines one line of bigLen bytes. It counts what it produced and
// samples the heap as it is read.
type eventStream struct {
	size     int64 // stop starting new lines after this many bytes
	bigEvery int   // every bigEvery-th line is oversized; 0: never
	bigLen   int

	written          int64 // bytes handed out
	planned          int64 // bytes of the lines started
	line             int
	pending          []byte // bytes of the current line still to hand out
	pad              int    // filler bytes of an oversized line, before tail
	tail             []byte
	scratch          []byte
	settles, ignored int
	malformed        int
	oversized        []int // line numbers

	heap memSampler
}

// memSampler records the largest HeapInuse seen, reading the memory
// statistics once per MiB read.
type memSampler struct {
	next int64
	peak uint64
}

func (m *memSampler) sample(at int64) {
	if at < m.next {
		return
	}
	m.next = at + 1<<20
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.peak = max(m.peak, ms.HeapInuse)
}

func (s *eventStream) nextLine() bool {
	if s.planned >= s.size {
		return false
	}
	s.line++
	b := s.scratch[:0]
	switch {
	case s.bigEvery > 0 && s.line%s.bigEvery == 0:
		b = append(b, `{"message_id":"<big@n.example.com>","event":"delivered","pad":"`...)
		s.pad = s.bigLen - len(b) - 3
		s.tail = []byte("\"}\n")
		s.oversized = append(s.oversized, s.line)
	case s.line%10007 == 0:
		b = append(b, "{not json\n"...)
		s.malformed++
	case s.line%7 == 0:
		b = append(b, `{"message_id":"<`...)
		b = strconv.AppendInt(b, int64(s.line), 10)
		b = append(b, `@n.example.com>","event":"queued","timestamp":"2026-11-30T02:00:00Z"}`+"\n"...)
		s.ignored++
	default:
		b = append(b, `{"message_id":"`...)
		b = strconv.AppendInt(b, int64(s.line), 10)
		b = append(b, `@n.example.com","event":"delivered","timestamp":"2026-11-30T02:00:00Z","provider":"example","detail":"250 2.0.0 OK queued as ABCDEF0123456789"}`+"\n"...)
		s.settles++
	}
	s.scratch = b
	s.pending = b
	s.planned += int64(len(b) + max(s.pad, 0) + len(s.tail))
	return true
}

func (s *eventStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case len(s.pending) > 0:
			c := copy(p[n:], s.pending)
			s.pending = s.pending[c:]
			n += c
		case s.pad > 0:
			c := min(s.pad, len(p)-n)
			for i := range c {
				p[n+i] = 'x'
			}
			s.pad -= c
			n += c
		case len(s.tail) > 0:
			c := copy(p[n:], s.tail)
			s.tail = s.tail[c:]
			n += c
		default:
			if !s.nextLine() {
				s.written += int64(n)
				s.heap.sample(s.written)
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
		}
	}
	s.written += int64(n)
	s.heap.sample(s.written)
	return n, nil
}

// readBounded reads s through Read and checks that every line was
// accounted for exactly and that the heap grew by less than limit bytes.
func readBounded(t *testing.T, s *eventStream, limit uint64) reconcile.Stats {
	t.Helper()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	s.heap.peak = before.HeapInuse
	settled := 0
	st, err := reconcile.Read(s, func(ledger.Settlement) error { settled++; return nil })
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	growth := s.heap.peak - before.HeapInuse
	t.Logf("%d MiB in %d lines (%d oversized): heap in use grew by at most %.1f MiB", s.written>>20, s.line, len(s.oversized), float64(growth)/(1<<20))
	if growth >= limit {
		t.Errorf("heap in use grew by %d bytes reading the stream, want under %d", growth, limit)
	}
	if st.Lines != s.line || settled != s.settles || st.Irrelevant != s.ignored || st.Malformed != s.malformed || st.Oversized != len(s.oversized) {
		t.Errorf("stats %+v with %d settled; want %d lines, %d settled, %d irrelevant, %d malformed, %d oversized",
			st, settled, s.line, s.settles, s.ignored, s.malformed, len(s.oversized))
	}
	// Every oversized line among the reported problems, by its number.
	var reported []int
	for _, p := range st.Problems {
		if strings.Contains(p.Reason, "longer than") {
			reported = append(reported, p.Line)
		}
	}
	if len(st.Problems) < 100 && len(reported) != len(s.oversized) {
		t.Errorf("oversized lines reported at %v, want %v", reported, s.oversized)
	}
	for i, l := range reported {
		if l != s.oversized[i] {
			t.Errorf("oversized line reported as line %d, want %d", l, s.oversized[i])
		}
	}
	return st
}

// One line of 10 MB among ordinary ones is rejected with its line number,
// the next line is still read, and the line never sits in memory: the
// heap grows by far less than the line's size.
func TestReadTenMegabyteLineInBoundedMemory(t *testing.T) {
	// Not parallel: the heap is measured for the whole process.
	// Lines 1 and 2 ordinary, line 3 the 10 MB one, then lines 4 and 5
	// (ordinary lines are under 200 bytes).
	s := &eventStream{size: 10<<20 + 500, bigEvery: 3, bigLen: 10 << 20}
	st := readBounded(t, s, 8<<20)
	if s.line != 5 || len(st.Problems) != 1 || st.Problems[0].Line != 3 || st.Oversized != 1 || st.Lines-st.Oversized != 4 {
		t.Fatalf("%d lines generated; stats %+v, want the 10 MB line 3 rejected and the 4 others read", s.line, st)
	}
}

// A provider event file of 64 MiB (1 GiB with SCAN_TEST_1GB=1 and without
// -short) holding ordinary events and several 10 MB lines is read in
// bounded memory with every line accounted for.
func TestReadLargeStreamInBoundedMemory(t *testing.T) {
	// Not parallel: the heap is measured for the whole process.
	size := int64(64 << 20)
	if !testing.Short() && os.Getenv("SCAN_TEST_1GB") != "" {
		size = 1 << 30
	}
	s := &eventStream{size: size, bigEvery: 40_000, bigLen: 10 << 20}
	st := readBounded(t, s, 32<<20)
	if st.Oversized == 0 || st.Malformed == 0 || st.Irrelevant == 0 {
		t.Fatalf("the stream did not exercise every kind of line: %+v", st)
	}
}
