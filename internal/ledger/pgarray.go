package ledger

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"time"
)

// pgArray writes one-dimensional arrays in PostgreSQL's binary format
// (array_send's, which array_recv reads): the batch statements' columns
// sent as []byte parameters, which lib/pq's binary_parameters (Open)
// sends in binary format, so that the server decodes each element with
// its type's receive function instead of parsing an array literal
// (array_in) and casting each element from text (date_in,
// timestamptz_in, int4in). A statement reads such a parameter as the
// array type it casts it to ($1::date[]), which must be the element type
// written here (array_recv refuses another).
//
// The format: int32 number of dimensions (0 for an empty array), int32
// flags (1 when an element is NULL), the element type's OID, then per
// dimension its int32 size and lower bound (1); then per element its
// int32 length (-1 for NULL) and its binary form. Big-endian throughout.
//
// Every array of a batch is appended to one buffer (b): begin starts an
// array, the element methods append to it, and end returns its bytes, a
// slice of the buffer that stays valid as long as the buffer is not
// reset. No element allocates. The zero value is ready to use; a pgArray
// is not safe for concurrent use.
type pgArray struct {
	b     []byte
	start int // where the array being written begins
	n     int // its elements so far
}

// The element types' OIDs (pg_type.oid; fixed in every PostgreSQL).
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt4        = 23
	oidText        = 25
	oidDate        = 1082
	oidTimestamptz = 1184
)

// pgEpoch is PostgreSQL's epoch for dates and timestamps, in Unix seconds
// (2000-01-01 00:00 UTC), and pgEpochDays the same in days.
const (
	pgEpoch     = 946684800
	pgEpochDays = pgEpoch / 86400
)

// arrayHeader is the header's size: ndim, flags, element type, one
// dimension's size and lower bound.
const arrayHeader = 20

// grow makes room for n more bytes, so that a batch's arrays are
// written with one allocation when the caller's estimate holds.
func (a *pgArray) grow(n int) {
	if cap(a.b)-len(a.b) < n {
		b := make([]byte, len(a.b), 2*cap(a.b)+n)
		copy(b, a.b)
		a.b = b
	}
}

// begin starts an array of elements of type oid.
func (a *pgArray) begin(oid uint32) {
	a.start, a.n = len(a.b), 0
	a.b = binary.BigEndian.AppendUint32(a.b, 1) // ndim, 0 at end when empty
	a.b = binary.BigEndian.AppendUint32(a.b, 0) // flags: no NULL so far
	a.b = binary.BigEndian.AppendUint32(a.b, oid)
	a.b = binary.BigEndian.AppendUint32(a.b, 0) // size, set at end
	a.b = binary.BigEndian.AppendUint32(a.b, 1) // lower bound
}

// end finishes the array begun last and returns its bytes. An empty array
// has no dimension (as array_send writes it).
func (a *pgArray) end() []byte {
	h := a.b[a.start:]
	if a.n == 0 {
		binary.BigEndian.PutUint32(h, 0)
		a.b = a.b[:a.start+12]
	} else {
		binary.BigEndian.PutUint32(h[12:], uint32(a.n))
	}
	return a.b[a.start:len(a.b):len(a.b)]
}

// null appends a NULL element.
func (a *pgArray) null() {
	binary.BigEndian.PutUint32(a.b[a.start+4:], 1)
	a.b = binary.BigEndian.AppendUint32(a.b, math.MaxUint32) // -1
	a.n++
}

// text appends a text element: the bytes, which must be valid UTF-8
// (the connection's client encoding).
func (a *pgArray) text(s string) {
	a.b = binary.BigEndian.AppendUint32(a.b, uint32(len(s)))
	a.b = append(a.b, s...)
	a.n++
}

// textOrNull appends s, or NULL for "".
func (a *pgArray) textOrNull(s string) {
	if s == "" {
		a.null()
		return
	}
	a.text(s)
}

// hex appends a text element of p's hexadecimal digits ("" for none).
func (a *pgArray) hex(p []byte) {
	at := a.open()
	a.b = hex.AppendEncode(a.b, p)
	a.close(at)
}

// open starts an element whose bytes the caller appends to a.b, and
// returns where its length goes; close(at) then sets the length.
func (a *pgArray) open() int {
	a.b = append(a.b, 0, 0, 0, 0)
	return len(a.b)
}

// close ends the element open returned at.
func (a *pgArray) close(at int) {
	binary.BigEndian.PutUint32(a.b[at-4:], uint32(len(a.b)-at))
	a.n++
}

// bytea appends a bytea element, NULL for nil.
func (a *pgArray) bytea(p []byte) {
	if p == nil {
		a.null()
		return
	}
	a.b = binary.BigEndian.AppendUint32(a.b, uint32(len(p)))
	a.b = append(a.b, p...)
	a.n++
}

// byteaOrNull appends p, or NULL for an empty or nil p (as the hex text
// form's "" was).
func (a *pgArray) byteaOrNull(p []byte) {
	if len(p) == 0 {
		a.null()
		return
	}
	a.bytea(p)
}

// boolsOrNull returns v as a bool[] parameter written into a, or nil (a
// NULL parameter) for a nil v.
func (a *pgArray) boolsOrNull(v []bool) any {
	if v == nil {
		return nil
	}
	a.begin(oidBool)
	for _, b := range v {
		a.bool(b)
	}
	return a.end()
}

// int4 appends an int4 element; v must fit in 32 bits (checkInt4).
func (a *pgArray) int4(v int) {
	a.b = binary.BigEndian.AppendUint32(a.b, 4)
	a.b = binary.BigEndian.AppendUint32(a.b, uint32(int32(v)))
	a.n++
}

// bool appends a bool element.
func (a *pgArray) bool(v bool) {
	a.b = binary.BigEndian.AppendUint32(a.b, 1)
	if v {
		a.b = append(a.b, 1)
	} else {
		a.b = append(a.b, 0)
	}
	a.n++
}

// date appends t's calendar date in t's own location, as
// t.Format("2006-01-02") names it: days since 2000-01-01.
func (a *pgArray) date(t time.Time) {
	y, m, d := t.Date()
	days := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()/86400 - pgEpochDays
	a.b = binary.BigEndian.AppendUint32(a.b, 4)
	a.b = binary.BigEndian.AppendUint32(a.b, uint32(int32(days)))
	a.n++
}

// timestamptz appends the instant t, rounded to the microsecond as
// PostgreSQL rounds a literal's fraction: microseconds since
// 2000-01-01 00:00 UTC. The zero time is 0001-01-01 00:00 UTC, a valid
// timestamptz, as its text form was.
func (a *pgArray) timestamptz(t time.Time) {
	us := (t.Unix()-pgEpoch)*1e6 + int64(t.Nanosecond()+500)/1000
	a.b = binary.BigEndian.AppendUint32(a.b, 8)
	a.b = binary.BigEndian.AppendUint64(a.b, uint64(us))
	a.n++
}

// timestamptzOrNull appends t, or NULL for the zero time.
func (a *pgArray) timestamptzOrNull(t time.Time) {
	if t.IsZero() {
		a.null()
		return
	}
	a.timestamptz(t)
}

// checkInt4 returns an error naming what when v does not fit an int4, as
// the server's cast of its text form refused it.
func checkInt4(what string, v int) error {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return fmt.Errorf("%s %d out of range for type integer", what, v)
	}
	return nil
}
