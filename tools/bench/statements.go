package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Settings of the bench's own server for -statement-stats.
const (
	// SettingStatementStatsOn makes every backend log each statement's
	// rusage (per phase in the extended protocol: parse, bind, execute).
	SettingStatementStatsOn = `ALTER SYSTEM SET log_statement_stats = on`
	// SettingStatementStatsOff undoes it.
	SettingStatementStatsOff = `ALTER SYSTEM RESET log_statement_stats`
	// SettingReload makes the server and its backends read the settings.
	SettingReload = `SELECT pg_reload_conf()`
)

// statementStatsOn turns the statements' rusage logging on and returns
// the server log's size, where the pass's entries will start.
func (b *bench) statementStatsOn(ctx context.Context, db *sql.DB) (int64, error) {
	st, err := os.Stat(b.serverLog())
	if err != nil {
		return 0, err
	}
	for _, q := range []string{SettingStatementStatsOn, SettingReload} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return 0, fmt.Errorf("statement stats: %w", err)
		}
	}
	return st.Size(), nil
}

// statementStatsOff turns the logging off and prints the CPU of the
// pass's statements, read from the server log after offset at.
func (b *bench) statementStatsOff(ctx context.Context, db *sql.DB, at int64, n int) error {
	return b.statementStatsOffAs(ctx, db, at, n, "first pass")
}

// statementStatsOffAs is statementStatsOff for the pass called pass.
func (b *bench) statementStatsOffAs(ctx context.Context, db *sql.DB, at int64, n int, pass string) error {
	for _, q := range []string{SettingStatementStatsOff, SettingReload} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("statement stats: %w", err)
		}
	}
	f, err := os.Open(b.serverLog())
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(at, io.SeekStart); err != nil {
		return err
	}
	sums, err := statementCPU(f)
	if err != nil {
		return err
	}
	printStatementCPU(b.out, sums, n, pass)
	return nil
}

func (b *bench) serverLog() string { return filepath.Join(b.srv.Dir(), "postgres.log") }

// stmtCPU is one statement's CPU over a pass, in seconds.
type stmtCPU struct {
	text              string
	calls             int
	parse, bind, exec float64
}

var (
	logEntry = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[(\d+)\] (LOG|DETAIL|STATEMENT):  (.*)$`)
	rusage   = regexp.MustCompile(`([0-9.]+) s user, ([0-9.]+) s system`)
)

// statementCPU sums log_statement_stats entries by statement text (its
// first 90 characters, blanks collapsed): each backend logs "<PHASE>
// STATISTICS", its rusage in DETAIL's continuation lines, then the
// statement, over as many lines as it has.
func statementCPU(r io.Reader) (map[string]*stmtCPU, error) {
	l := &statLog{pending: map[string]*phaseCPU{}, sums: map[string]*stmtCPU{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		l.line(sc.Text())
	}
	l.flush()
	return l.sums, sc.Err()
}

// phaseCPU is one phase's rusage, logged before its statement.
type phaseCPU struct {
	phase string
	cpu   float64
	got   bool
}

// statLog reads a server log line by line.
type statLog struct {
	pending map[string]*phaseCPU // by backend pid
	sums    map[string]*stmtCPU
	detail  *phaseCPU // the entry being read is this phase's DETAIL
	stmt    *phaseCPU // the entry being read is this phase's STATEMENT
	text    []string
}

func (l *statLog) line(line string) {
	m := logEntry.FindStringSubmatch(line)
	if m == nil { // a continuation line
		if l.detail != nil && !l.detail.got {
			if u := rusage.FindStringSubmatch(line); u != nil {
				usr, _ := strconv.ParseFloat(u[1], 64)
				sys, _ := strconv.ParseFloat(u[2], 64)
				l.detail.cpu, l.detail.got = usr+sys, true
			}
		}
		if l.stmt != nil {
			l.text = append(l.text, line)
		}
		return
	}
	l.flush()
	pid, level, text := m[1], m[2], m[3]
	switch p := l.pending[pid]; {
	case level == "LOG" && strings.HasSuffix(text, "STATISTICS"):
		l.pending[pid] = &phaseCPU{phase: strings.Fields(text)[0]}
	case level == "DETAIL" && p != nil:
		l.detail = p
	case level == "STATEMENT" && p != nil:
		delete(l.pending, pid)
		l.stmt, l.text = p, []string{text}
	}
}

// flush ends the entry being read: a statement's phase is added to its sums.
func (l *statLog) flush() {
	p := l.stmt
	l.detail, l.stmt = nil, nil
	if p == nil {
		return
	}
	key := strings.Join(strings.Fields(strings.Join(l.text, " ")), " ")
	key = key[:min(len(key), 90)]
	s := l.sums[key]
	if s == nil {
		s = &stmtCPU{text: key}
		l.sums[key] = s
	}
	switch p.phase {
	case "PARSE":
		s.parse += p.cpu
	case "BIND":
		s.bind += p.cpu
	default: // QUERY (simple protocol) or EXECUTE
		s.calls++
		s.exec += p.cpu
	}
}

// printStatementCPU prints the statements by CPU, most first, in us a
// notice of a pass of n.
func printStatementCPU(w io.Writer, sums map[string]*stmtCPU, n int, pass string) {
	all := make([]*stmtCPU, 0, len(sums))
	var total float64
	for _, s := range sums {
		all = append(all, s)
		total += s.parse + s.bind + s.exec
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].parse+all[i].bind+all[i].exec > all[j].parse+all[j].bind+all[j].exec
	})
	us := func(s float64) float64 { return s / float64(n) * 1e6 }
	fmt.Fprintf(w, "PostgreSQL's CPU by statement, %s (log_statement_stats; %.2f s in all, %.1f us a notice):\n\n| statement | calls | parse | bind | execute | us a notice |\n|---|---|---|---|---|---|\n", pass, total, us(total))
	for _, s := range all[:min(len(all), 15)] {
		fmt.Fprintf(w, "| `%s` | %d | %.2f s | %.2f s | %.2f s | %.1f |\n", s.text, s.calls, s.parse, s.bind, s.exec, us(s.parse+s.bind+s.exec))
	}
	fmt.Fprintln(w)
}
