// Package redact keeps secrets out of what the program prints: a
// Redactor replaces the secrets registered with it, and the value of any
// password=... pair, with REDACTED in a string or in everything written
// through its Writer; DSN hides the password of a connection string.
//
// Which values are secrets (which environment variables) is the
// command's business; this package knows how a secret can be spelled in
// output: as itself, JSON-escaped in a log line, URL-escaped in a URL, or
// as the value of a password=... pair.
package redact

import (
	"encoding/json"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// Mask is what a redacted value is replaced with.
const Mask = "REDACTED"

// minSecretLen is the length below which Add ignores a value: replacing
// every "a" or "ab" in the output would garble it and protect nothing.
const minSecretLen = 4

var passwordRe = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redactor replaces registered secrets, and the value of every
// password=... pair, with Mask. The zero value has no secrets and still
// redacts password=... pairs. A Redactor is safe for concurrent use: a log
// line may be written while secrets are registered.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string
}

// Add registers secret, and its JSON-escaped spelling when that differs
// (quotes, backslashes, control characters), as a log line carries it.
// Values shorter than 4 bytes are ignored.
func (r *Redactor) Add(secret string) {
	if len(secret) < minSecretLen {
		return
	}
	add := []string{secret}
	if j, err := json.Marshal(secret); err == nil && string(j[1:len(j)-1]) != secret {
		add = append(add, string(j[1:len(j)-1]))
	}
	r.mu.Lock()
	r.secrets = append(r.secrets, add...)
	r.mu.Unlock()
}

// AddPasswords registers the passwords that conn carries: the password
// of a URL's user (as written, query-escaped and path-escaped) and the
// value of every password=... pair, as in a keyword connection string or
// a URL's query. An empty or unparsable conn registers what it can.
func (r *Redactor) AddPasswords(conn string) {
	if u, err := url.Parse(conn); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			r.Add(p)
			r.Add(url.QueryEscape(p))
			r.Add(url.PathEscape(p))
		}
	}
	for _, m := range passwordRe.FindAllStringSubmatch(conn, -1) {
		r.Add(strings.Trim(m[2], "'"))
	}
}

// Reset forgets every registered secret.
func (r *Redactor) Reset() {
	r.mu.Lock()
	r.secrets = nil
	r.mu.Unlock()
}

// Redact returns s with every registered secret, and the value of every
// password=... pair, replaced with Mask. Redacting twice changes nothing
// more: a pair already redacted keeps what follows it.
func (r *Redactor) Redact(s string) string {
	r.mu.RLock()
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, Mask)
	}
	r.mu.RUnlock()
	return redactPasswords(s)
}

// Writer returns an io.Writer that writes to w what is written to it,
// redacted. Each Write is redacted whole, so a secret split over two
// Writes is not found: give it whole lines (a zerolog logger writes one
// line per Write). It reports len(p) written when w took the redacted
// text, so callers see no short write.
func (r *Redactor) Writer(w io.Writer) io.Writer { return writer{r: r, w: w} }

type writer struct {
	r *Redactor
	w io.Writer
}

func (w writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.r.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// DSN returns a PostgreSQL URL or keyword connection string with its
// password (a URL's user password, a password query parameter, a
// password=... pair) replaced with Mask, for an error message that must
// say which database it could not reach.
func DSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), Mask)
			}
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", Mask)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return passwordRe.ReplaceAllString(dsn, "${1}"+Mask)
}

// redactPasswords replaces the value of every password=... pair, leaving
// one already redacted as it is (with what follows it, such as the ")" and
// ":" of "connect to the database (...password=REDACTED): ...").
func redactPasswords(s string) string {
	return passwordRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := passwordRe.FindStringSubmatch(m)
		if strings.HasPrefix(sub[2], Mask) {
			return m
		}
		return sub[1] + Mask
	})
}
