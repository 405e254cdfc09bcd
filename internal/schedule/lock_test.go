package schedule_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"scan/internal/pgtest"
	"scan/internal/schedule"
)

// A server slow to answer the watchdog's check (a loaded host: the check
// waited longer than WatchEvery) has not lost the lock. The check used to
// get WatchEvery to answer; lib/pq then closed the connection, which
// ended the transaction and freed the lock, and the pass was cancelled:
// under load a second scheduler took the lock and ran its pass beside the
// one still in flight (TestScheduleTwoSchedulersNeverOverlap in cmd/scan
// waited for ever for its second skip).
func TestAdvisoryLockSurvivesASlowCheck(t *testing.T) {
	t.Parallel()
	dsn := lockDSN(t)
	direct := pgtest.Open(t, dsn)
	p := newSlowProxy(t, direct.DB)
	lock := schedule.NewAdvisoryLock(pgtest.Open(t, p.dsn(t, dsn)), zerolog.Nop())
	lock.WatchEvery = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	passCtx, unlock, err := lock.TryLockContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	// The next reply the server sends is the watchdog's first check's.
	p.hold()
	select {
	case <-p.heldReply:
	case <-ctx.Done():
		t.Fatal("the watchdog never checked the lock")
	}
	// The slowness itself is the stimulus, so it is a time: ten checks'
	// intervals, far past what the check used to be given.
	slow := time.NewTimer(10 * lock.WatchEvery)
	select {
	case <-slow.C:
	case <-passCtx.Done():
		t.Fatal("the pass was cancelled while its lock's check was only slow")
	}
	p.release()
	// Two replies through after the release: the held one, and the next
	// check's, which the watchdog sends only if it judged the first alive.
	for i := 0; i < 2; i++ {
		select {
		case <-p.forwarded:
		case <-passCtx.Done():
			t.Fatal("the pass was cancelled after a slow check: the watchdog lost the lock itself")
		case <-ctx.Done():
			t.Fatal("no check after the slow one")
		}
	}
	if passCtx.Err() != nil {
		t.Fatal("the pass's context ended while the lock is held")
	}
	if unlock2, err := tryLock(t, direct); !errors.Is(err, schedule.ErrHeld) {
		if err == nil {
			unlock2()
		}
		t.Fatalf("another scheduler's TryLock after a slow check = %v, want ErrHeld", err)
	}
}

// slowProxy forwards connections to the test's PostgreSQL server. While
// held, it keeps back what the server sends (a server too loaded to
// answer), and says so on heldReply; each chunk of the server's it
// forwards after a release is announced on forwarded.
type slowProxy struct {
	ln        net.Listener
	mu        sync.Mutex
	gate      chan struct{} // nil: the server's bytes pass
	released  bool
	heldReply chan struct{}
	forwarded chan struct{}
}

// newSlowProxy listens where the test's DSN can point (a Unix socket for
// a server on one, else loopback TCP) and forwards to db's server.
func newSlowProxy(t *testing.T, db *sql.DB) *slowProxy {
	t.Helper()
	var addr, port, sockets string
	if err := db.QueryRow(serverAddress).Scan(&addr, &port, &sockets); err != nil {
		t.Fatal(err)
	}
	network, target, listen := "tcp", net.JoinHostPort(addr, port), "127.0.0.1:0"
	if addr == "" {
		dir, err := os.MkdirTemp("", "lk") // short: a socket path has ~100 bytes
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := strings.TrimSpace(strings.Split(sockets, ",")[0])
		network, target = "unix", filepath.Join(sock, ".s.PGSQL."+port)
		listen = filepath.Join(dir, ".s.PGSQL."+port)
	}
	ln, err := net.Listen(network, listen)
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, heldReply: make(chan struct{}, 1), forwarded: make(chan struct{}, 64)}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); p.release(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial(network, target)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(s, c); s.Close(); c.Close() }()
			go func() { defer wg.Done(); p.replies(c, s); s.Close(); c.Close() }()
		}
	}()
	return p
}

// serverAddress is where the server is: its TCP address (” on a Unix
// socket), its port, and its socket directories.
const serverAddress = `SELECT coalesce(host(inet_server_addr()), ''), current_setting('port'), current_setting('unix_socket_directories')`

// dsn is base pointed at the proxy.
func (p *slowProxy) dsn(t *testing.T, base string) string {
	t.Helper()
	host, port := p.ln.Addr().String(), ""
	if p.ln.Addr().Network() == "unix" {
		host, port = filepath.Dir(host), strings.TrimPrefix(filepath.Base(host), ".s.PGSQL.")
	} else if h, pt, err := net.SplitHostPort(host); err == nil {
		host, port = h, pt
	}
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("host", host)
		q.Set("port", port)
		u.Host, u.RawQuery = "", q.Encode()
		return u.String()
	}
	return base + " host=" + host + " port=" + port // a later key wins
}

// replies copies what the server sends to the client, through the gate.
func (p *slowProxy) replies(client, server net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate, after := p.gate, p.released
			p.mu.Unlock()
			if gate != nil {
				select {
				case p.heldReply <- struct{}{}:
				default:
				}
				<-gate
				after = true
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
			if after {
				select {
				case p.forwarded <- struct{}{}:
				default:
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// hold keeps the server's bytes back from now on.
func (p *slowProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gate = make(chan struct{})
}

// release lets them through again.
func (p *slowProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
		p.gate, p.released = nil, true
	}
}
