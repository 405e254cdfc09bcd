package reconcile

import (
	"bufio"
	"fmt"
	"io"
)

// splitter cuts a byte stream into JSON payloads without decoding them:
// one payload per line, several on a line, one spread over many lines
// (pretty-printed), or the elements of a top-level JSON array (each
// element is a payload of its own, so a large array of events needs no
// more memory than its largest event). It only tracks brackets and
// strings; whether a payload is valid JSON is for the decoder to say.
//
// It resynchronises after garbage so one bad payload never hides the
// next: a line that does not start a JSON value is skipped to its end; a
// raw line break inside a string (JSON forbids it), or an object that a
// line starting with '{' at column 0 interrupts, ends the unterminated
// payload as malformed. A payload longer than MaxLine bytes is reported
// as oversized, its bytes discarded as they are read.
type splitter struct {
	br   *bufio.Reader
	line int // current line, from 1

	// emit is called with each payload and the line it starts on, or with
	// a problem (and nil payload).
	emit func(line int, payload []byte, problem string, oversized bool) error

	buf       []byte
	stack     []byte // open containers of the current payload
	inString  bool
	escape    bool
	tooBig    bool
	startLine int
	inArray   bool // inside a top-level array: its elements are payloads
	skipLine  bool
	lineStart bool
	// lineStart0 says the byte being handled is at column 0.
	lineStart0 bool
	lastByte   byte
}

// split reads r to its end and returns the number of lines it held.
func split(r io.Reader, emit func(line int, payload []byte, problem string, oversized bool) error) (int, error) {
	s := &splitter{br: bufio.NewReaderSize(r, 64<<10), line: 1, emit: emit, lineStart: true}
	// A byte order mark at the very start is not a payload.
	if b, err := s.br.Peek(3); err == nil && string(b) == "\xef\xbb\xbf" {
		_, _ = s.br.Discard(3)
	}
	sawAny := false
	for {
		b, err := s.br.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s.line, fmt.Errorf("read events: line %d: %w", s.line, err)
		}
		sawAny = true
		s.lastByte = b
		if err := s.step(b); err != nil {
			return s.line, err
		}
	}
	if len(s.stack) > 0 {
		if err := s.fail("unterminated JSON document"); err != nil {
			return s.line, err
		}
	}
	lines := s.line
	if !sawAny || s.lastByte == '\n' {
		lines--
	}
	return lines, nil
}

func (s *splitter) reset() {
	s.buf, s.stack = s.buf[:0], s.stack[:0]
	s.inString, s.escape, s.tooBig = false, false, false
}

// fail reports the current payload as unusable and drops it.
func (s *splitter) fail(reason string) error {
	line, big := s.startLine, s.tooBig
	s.reset()
	s.inArray = false // the array it was in is cut off too
	if big {
		return s.emit(line, nil, fmt.Sprintf("payload longer than %d bytes", MaxLine), true)
	}
	return s.emit(line, nil, reason, false)
}

func (s *splitter) step(b byte) error {
	atStart := s.lineStart
	s.lineStart = b == '\n'
	if b == '\n' {
		defer func() { s.line++ }()
		s.skipLine = false
		if s.inString {
			return s.fail("line break inside a JSON string")
		}
	}
	if s.skipLine {
		return nil
	}
	s.lineStart0 = atStart
	if len(s.stack) == 0 {
		return s.between(b)
	}
	if atStart && b == '{' && !s.inString && s.stack[len(s.stack)-1] == '{' {
		// An object member never starts with '{': the payload before was
		// cut off. Report it and start over with this line.
		if err := s.fail("unterminated JSON document"); err != nil {
			return err
		}
		return s.between(b)
	}
	s.add(b)
	switch {
	case s.inString:
		switch {
		case s.escape:
			s.escape = false
		case b == '\\':
			s.escape = true
		case b == '"':
			s.inString = false
		}
	case b == '"':
		s.inString = true
	case b == '{' || b == '[':
		s.stack = append(s.stack, b)
	case b == '}' || b == ']':
		s.stack = s.stack[:len(s.stack)-1]
		if len(s.stack) == 0 {
			line, big := s.startLine, s.tooBig
			payload := s.buf
			s.reset()
			if big {
				return s.emit(line, nil, fmt.Sprintf("payload longer than %d bytes", MaxLine), true)
			}
			return s.emit(line, payload, "", false)
		}
	}
	return nil
}

// between handles a byte outside any payload.
func (s *splitter) between(b byte) error {
	switch {
	case b == ' ' || b == '\t' || b == '\r' || b == '\n':
	case b == '[' && (!s.inArray || s.lineStart0):
		// A '[' at column 0 starts a new top-level array even when the
		// previous one was never closed.
		s.inArray = true
	case s.inArray && b == ',':
	case s.inArray && b == ']':
		s.inArray = false
	case b == '{' || b == '[':
		s.startLine = s.line
		s.add(b)
		s.stack = append(s.stack, b)
	default:
		s.inArray = false
		s.skipLine = b != '\n'
		return s.emit(s.line, nil, "not a JSON object or array", false)
	}
	return nil
}

func (s *splitter) add(b byte) {
	if s.tooBig {
		return
	}
	if len(s.buf) >= MaxLine {
		s.tooBig = true
		s.buf = s.buf[:0]
		return
	}
	s.buf = append(s.buf, b)
}
