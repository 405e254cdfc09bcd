package ledger

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/pgtest"
)

// Every element type the batch statements send, written by pgArray and
// read back by the server's array_recv, printed by the server as text in
// UTC: NULLs, empty arrays, non-ASCII text, the zero time, dates and
// instants before PostgreSQL's epoch, the bounds of int4.
func TestPGArrayRoundTrip(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	utc := time.UTC
	plus2 := time.FixedZone("plus2", 2*3600)
	for _, tc := range []struct {
		name, typ, want string
		write           func(a *pgArray)
	}{
		{"text", "text", `{"",NULL,a,"b c","q\"uote\\",é漢字,NULL}`, func(a *pgArray) {
			a.text("")
			a.textOrNull("")
			a.text("a")
			a.text("b c")
			a.text(`q"uote\`)
			a.textOrNull("é漢字")
			a.null()
		}},
		{"text empty", "text", `{}`, func(*pgArray) {}},
		{"text hex", "text", `{"",00ff10}`, func(a *pgArray) { a.hex(nil); a.hex([]byte{0, 0xff, 0x10}) }},
		{"int4", "int4", `{0,-1,2147483647,-2147483648,NULL}`, func(a *pgArray) {
			a.int4(0)
			a.int4(-1)
			a.int4(math.MaxInt32)
			a.int4(math.MinInt32)
			a.null()
		}},
		{"int4 empty", "int4", `{}`, func(*pgArray) {}},
		{"bool", "bool", `{t,f,NULL}`, func(a *pgArray) { a.bool(true); a.bool(false); a.null() }},
		{"date", "date", `{2000-01-01,1999-12-31,2026-12-02,0001-01-01,2026-12-03,NULL}`, func(a *pgArray) {
			a.date(time.Date(2000, 1, 1, 0, 0, 0, 0, utc))
			a.date(time.Date(1999, 12, 31, 23, 59, 0, 0, utc))
			a.date(time.Date(2026, 12, 2, 12, 0, 0, 0, utc))
			a.date(time.Time{})
			// the date in the time's own location, as Format names it
			a.date(time.Date(2026, 12, 3, 1, 0, 0, 0, plus2))
			a.null()
		}},
		{"date empty", "date", `{}`, func(*pgArray) {}},
		{"timestamptz", "timestamptz", `{"2000-01-01 00:00:00+00","0001-01-01 00:00:00+00","1969-12-31 23:59:59.999999+00",` +
			`"2026-12-02 07:30:00.000002+00","2026-12-02 09:30:00.123457+00",NULL,NULL}`, func(a *pgArray) {
			a.timestamptz(time.Date(2000, 1, 1, 0, 0, 0, 0, utc))
			a.timestamptz(time.Time{})
			a.timestamptz(time.Date(1969, 12, 31, 23, 59, 59, 999999000, utc))
			a.timestamptz(time.Date(2026, 12, 2, 9, 30, 0, 1501, plus2)) // rounded to the microsecond
			a.timestamptz(time.Date(2026, 12, 2, 9, 30, 0, 123456789, utc))
			a.timestamptzOrNull(time.Time{})
			a.null()
		}},
		{"timestamptz empty", "timestamptz", `{}`, func(*pgArray) {}},
		{"bytea", "bytea", `{"\\x","\\x00ff",NULL,NULL}`, func(a *pgArray) {
			a.bytea([]byte{})
			a.bytea([]byte{0, 0xff})
			a.bytea(nil)
			a.null()
		}},
		{"bytea empty", "bytea", `{}`, func(*pgArray) {}},
		{"bytea or NULL", "bytea", `{NULL,NULL,"\\x00ff"}`, func(a *pgArray) {
			a.byteaOrNull([]byte{})
			a.byteaOrNull(nil)
			a.byteaOrNull([]byte{0, 0xff})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a pgArray
			a.begin(oidText) // an array before, in the same buffer
			a.text("before")
			before := a.end()
			a.begin(typeOID[tc.typ])
			tc.write(&a)
			got := serverText(t, db, tc.typ, a.end())
			if got != tc.want {
				t.Errorf("%s[] read back as\n%s\nwant\n%s", tc.typ, got, tc.want)
			}
			if got := serverText(t, db, "text", before); got != "{before}" {
				t.Errorf("the array before it in the buffer reads %s", got)
			}
		})
	}
}

// boolsOrNull writes a bool[] after what the buffer holds, and a NULL
// parameter (nil) for a nil slice: the claim statements' probe filter,
// where NULL probes every claim.
func TestPGArrayBoolsOrNull(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	var a pgArray
	a.begin(oidText)
	a.text("before")
	before := a.end()
	if p := a.boolsOrNull(nil); p != nil {
		t.Fatalf("nil filter: %v, want a NULL parameter", p)
	}
	for _, tc := range []struct {
		v    []bool
		want string
	}{{[]bool{true, false, true}, "{t,f,t}"}, {[]bool{}, "{}"}} {
		if got := serverText(t, db, "bool", a.boolsOrNull(tc.v).([]byte)); got != tc.want {
			t.Errorf("%v read back as %s, want %s", tc.v, got, tc.want)
		}
	}
	if got := serverText(t, db, "text", before); got != "{before}" {
		t.Errorf("the array before it in the buffer reads %s", got)
	}
	var isNull bool
	if err := db.QueryRow(`SELECT $1::boolean[] IS NULL`, a.boolsOrNull(nil)).Scan(&isNull); err != nil || !isNull {
		t.Fatalf("nil filter on the server: null %v, %v", isNull, err)
	}
}

// An element type the parameter is not cast to is refused, never read as
// another type.
func TestPGArrayWrongTypeRefused(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	var a pgArray
	a.begin(oidText)
	a.text("2026-12-02")
	var s string
	err := db.QueryRowContext(context.Background(), `SELECT $1::date[]::text`, a.end()).Scan(&s)
	if err == nil {
		t.Fatalf("a text[] read as date[]: %s, want an error", s)
	}
}

var typeOID = map[string]uint32{"text": oidText, "int4": oidInt4, "bool": oidBool, "date": oidDate, "timestamptz": oidTimestamptz, "bytea": oidBytea}

// serverText returns the array p, sent as a binary parameter of type typ[],
// as the server prints it, in UTC.
func serverText(t *testing.T, db *sqlx.DB, typ string, p []byte) string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SET LOCAL TimeZone = 'UTC'`); err != nil {
		t.Fatal(err)
	}
	var s string
	if err := tx.QueryRowContext(ctx, `SELECT $1::`+typ+`[]::text`, p).Scan(&s); err != nil {
		t.Fatalf("%s[]: %v", typ, err)
	}
	return s
}

func TestCheckInt4(t *testing.T) {
	t.Parallel()
	for v, ok := range map[int]bool{0: true, math.MaxInt32: true, math.MinInt32: true, math.MaxInt32 + 1: false, math.MinInt32 - 1: false} {
		if err := checkInt4("revision", v); (err == nil) != ok {
			t.Errorf("checkInt4(%d) = %v, want ok %v", v, err, ok)
		}
	}
}
