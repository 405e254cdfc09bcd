package redact_test

import (
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"

	"scan/internal/redact"
)

const dbPass = "dbpass-Q7m2Zr8w"

// A secret that JSON would escape (a quote, a backslash) is still removed
// from log lines, which carry it escaped.
func TestRedactCoversJSONEscapes(t *testing.T) {
	t.Parallel()
	sec := `quote"and\backslash-0123456789abcdef0123`
	var r redact.Redactor
	r.Add(sec)
	for _, in := range []string{sec, `{"x":"quote\"and\\backslash-0123456789abcdef0123"}`} {
		if got := r.Redact(in); strings.Contains(got, "backslash-0123456789abcdef0123") {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
}

// A password=... pair is redacted once: the text around an already
// redacted one survives a second pass, so the error still reads.
func TestRedactPasswordsKeepsTheMessage(t *testing.T) {
	t.Parallel()
	var r redact.Redactor
	in := "connect to the database (" + redact.DSN("host=db password="+dbPass) + "): pq: role \"x\" does not exist"
	want := "connect to the database (host=db password=REDACTED): pq: role \"x\" does not exist"
	once := r.Redact(redact.DSN("host=db password=" + dbPass))
	if once != "host=db password=REDACTED" {
		t.Errorf("DSN then Redact = %q", once)
	}
	if got := r.Redact(r.Redact(in)); got != want {
		t.Errorf("Redact twice = %q, want %q", got, want)
	}
	for _, in := range []string{"password='a b c' host=x", "PASSWORD = s3cr3t host=x", "x password=%s"} {
		if got := r.Redact(in); strings.Contains(got, "a b c") || strings.Contains(got, "s3cr3t") || strings.Contains(got, "%s") {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
}

// DSN hides the password wherever a connection string carries it, and
// keeps the rest, which says which database could not be reached.
func TestDSN(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"postgres://scan:" + dbPass + "@db.internal:5432/scan?sslmode=disable", "postgres://scan:REDACTED@db.internal:5432/scan?sslmode=disable"},
		{"postgres://scan@db.internal/scan?password=" + dbPass + "&sslmode=disable", "postgres://scan@db.internal/scan?password=REDACTED&sslmode=disable"},
		{"host=db dbname=scan password='" + dbPass + "' sslmode=disable", "host=db dbname=scan password=REDACTED sslmode=disable"},
		{"postgres://scan@db.internal/scan", "postgres://scan@db.internal/scan"},
		{"host=db dbname=scan", "host=db dbname=scan"},
	}
	for _, tc := range tests {
		if got := redact.DSN(tc.in); got != tc.want {
			t.Errorf("DSN(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// AddPasswords registers a URL's password as written and as each escaping
// spells it, and the value of every password=... pair; Reset forgets them.
func TestAddPasswords(t *testing.T) {
	t.Parallel()
	const pw = "p@ss/w0rd word"
	var r redact.Redactor
	r.AddPasswords("smtp://scan:" + url.PathEscape(pw) + "@mail.example.com:587")
	r.AddPasswords("host=db password='kw-secret-1234'")
	r.AddPasswords("")
	for _, in := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw), "auth kw-secret-1234 refused"} {
		got := r.Redact("error: " + in)
		if strings.Contains(got, "w0rd") || strings.Contains(got, "kw-secret") {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
	// Too short to be a secret: replacing it would garble the output.
	r.Add("abc")
	if got := r.Redact("abcdef"); got != "abcdef" {
		t.Errorf("a 3-byte secret was redacted: %q", got)
	}
	r.Reset()
	if got := r.Redact("error: " + pw); got != "error: "+pw {
		t.Errorf("after Reset, Redact = %q", got)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// The Writer writes the redacted text and reports the caller's length, so
// a logger sees no short write; an error of the underlying writer is
// passed on.
func TestWriter(t *testing.T) {
	t.Parallel()
	var r redact.Redactor
	r.Add("hmac-secret-0123456789")
	var out strings.Builder
	w := r.Writer(&out)
	line := `{"level":"error","error":"bad key hmac-secret-0123456789"}` + "\n"
	n, err := w.Write([]byte(line))
	if err != nil || n != len(line) {
		t.Errorf("Write = %d, %v; want %d, nil", n, err, len(line))
	}
	if want := `{"level":"error","error":"bad key REDACTED"}` + "\n"; out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
	boom := errors.New("disk full")
	if _, err := r.Writer(failWriter{boom}).Write([]byte(line)); !errors.Is(err, boom) {
		t.Errorf("Write to a failing writer = %v, want %v", err, boom)
	}
}

// Secrets registered while lines are being written (a command registers
// them again after parsing its flags) race with nothing: run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	var r redact.Redactor
	var out syncBuilder
	w := r.Writer(&out)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			r.Reset()
			r.Add("concurrent-secret-1")
		}()
		go func() {
			defer wg.Done()
			_, _ = w.Write([]byte("line\n"))
		}()
	}
	wg.Wait()
	r.Add("concurrent-secret-1")
	if got := r.Redact("x concurrent-secret-1"); got != "x REDACTED" {
		t.Errorf("Redact = %q", got)
	}
}

type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
