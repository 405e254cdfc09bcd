package send

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/textproto"
	"time"
)

// The pool: Pool slots, idle connections kept for reuse, and the lanes
// that keep a connection between two sends when the next message's
// envelope went out behind this one's.

type smtpLane struct {
	s *SMTP
	c *smtpConn // with the next message's envelope pending, and a slot
}

func (l *smtpLane) Close() {
	if l.c != nil {
		// Mid-transaction: the envelope's replies are unread and no
		// content was sent. Nothing to save.
		l.c.close()
		l.c = nil
		<-l.s.slots
	}
}

func (l *smtpLane) Send(ctx context.Context, m, next *Message) (Receipt, error) {
	s := l.s
	c := l.c
	l.c = nil
	if c != nil && c.pending != m {
		c.close()
		c = nil
		<-s.slots
	}
	if err := ctx.Err(); err != nil {
		if c != nil {
			c.close()
			<-s.slots
		}
		return Receipt{}, &Error{Class: Transient, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if c == nil {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return Receipt{}, &Error{Class: Transient, Err: fmt.Errorf("smtp: waiting for a connection: %w", ctx.Err())}
		}
		select {
		case c = <-s.idle:
		default:
		}
	}
	// The slot is held from here.
	if c != nil {
		c.dc.begin(deadline)
	}
	for {
		reused := c != nil
		if c == nil {
			var err error
			if c, err = s.dial(ctx, deadline); err != nil {
				<-s.slots
				return Receipt{}, err
			}
		}
		stop := context.AfterFunc(ctx, c.dc.expire)
		rcpt, state, err := c.transact(m, next)
		if !stop() && state == connReuse {
			state = connDrop // the deadline was forced into the past
		}
		switch {
		case state == connReuse && c.pending != nil:
			l.c = c // it carries next's envelope: keep it, and the slot
			return rcpt, err
		case state == connReuse:
			s.put(c)
		case state == connStale && reused && ctx.Err() == nil:
			// The server closed the idle connection before MAIL was
			// taken: nothing was sent, dial afresh.
			c.close()
			c = nil
			continue
		default:
			c.close()
		}
		<-s.slots
		return rcpt, err
	}
}

// connState says what a transaction left its connection fit for.
type connState int

const (
	connReuse connState = iota // in step, no transaction open
	connDrop                   // mid-transaction or broken
	connStale                  // failed at MAIL without a reply, or 421: closed by the server
)

func (s *SMTP) put(c *smtpConn) {
	c.dc.begin(time.Time{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.close()
		return
	}
	select {
	case s.idle <- c:
	default:
		c.close()
	}
}

// Close closes every idle connection (QUIT, bounded by a second) and makes
// connections in use close when their Send ends. Send must not be called
// after Close.
func (s *SMTP) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for {
		select {
		case c := <-s.idle:
			c.quit()
		default:
			return nil
		}
	}
}

// smtpConn is one connection, greeted, encrypted and authenticated.
type smtpConn struct {
	conn net.Conn // the session's stream: TLS over dc, or dc
	dc   *deadlineConn
	lim  *replyLimit
	r    *textproto.Reader
	w    *bufio.Writer

	// What the server offers.
	pipelining, utf8, size, eightBit bool

	// pending is the message whose envelope went out behind the previous
	// message, its replies unread.
	pending *Message
}

func (c *smtpConn) close() { _ = c.conn.Close() }

func (c *smtpConn) quit() {
	c.dc.begin(time.Now().Add(time.Second))
	c.lim.left = maxReplies
	if _, err := c.w.WriteString("QUIT\r\n"); err == nil && c.w.Flush() == nil {
		_, _, _ = c.r.ReadResponse(221)
	}
	c.close()
}
