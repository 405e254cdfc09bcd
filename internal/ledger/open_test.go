package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lib/pq"

	"scan/internal/ledger"
	"scan/internal/pgtest"
)

// openEcho reads an int parameter back. Given as the []byte "7", lib/pq
// sends it in binary format with binary_parameters, which the server
// refuses as an int (one byte, not four), and as the text 7 without.
const openEcho = `SELECT $1::int`

const openPassword = "s3cret-Open-pw"

func TestOpenRefusesURLsItCannotUse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, dsn, want string }{
		{"empty", "", "required"},
		{"unparsable URL", "postgres://scan:" + openPassword + "@db.internal:port/scan", "cannot parse the URL"},
		{"another database", "mysql://scan:" + openPassword + "@db.internal/scan", "not a PostgreSQL URL"},
		{"no keywords", "db.internal", "not a PostgreSQL URL"},
		{"unterminated keyword string", "host=/tmp dbname=scan password='" + openPassword, "cannot parse it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := ledger.Open(context.Background(), tc.dsn)
			var ue *ledger.URLError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || db != nil {
				t.Fatalf("Open(%q) = %v, %v; want a *URLError saying %q", tc.dsn, db, err, tc.want)
			}
			if strings.Contains(err.Error(), openPassword) {
				t.Errorf("the error prints the password: %v", err)
			}
		})
	}
}

func TestOpenUnreachableNamesTheHostNotThePassword(t *testing.T) {
	t.Parallel()
	dsn := "host=127.0.0.1 port=1 dbname=scan sslmode=disable connect_timeout=5 password=" + openPassword
	_, err := ledger.Open(context.Background(), dsn)
	var ue *ledger.URLError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), openPassword) {
		t.Fatalf("Open of an unreachable server: %v; want a connection error naming the host, without the password", err)
	}
}

func TestOpenSendsBinaryParameters(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	for _, tc := range []struct{ name, dsn string }{
		{"left out", withoutBinaryParameters(t, dsn)},
		{"on in the URL", dsn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := ledger.Open(context.Background(), tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if n := db.Stats().MaxOpenConnections; n != 8 {
				t.Errorf("pool of %d connections, want 8", n)
			}
			var got int
			err = db.QueryRowContext(context.Background(), openEcho, []byte("7")).Scan(&got)
			if err == nil || !strings.Contains(err.Error(), "insufficient data left in message") {
				t.Errorf("the []byte 7 as an int: %d, %v; want it sent in binary (refused: one byte, not four)", got, err)
			}
		})
	}
}

// A URL that turns binary_parameters off is refused before any connection:
// the batch statements' binary arrays would reach the server as text.
func TestOpenRefusesBinaryParametersOff(t *testing.T) {
	t.Parallel()
	base := withoutBinaryParameters(t, pgtest.DSN(t))
	sep := "&"
	if !strings.Contains(base, "://") {
		sep = " "
	}
	for _, off := range []string{"binary_parameters=no", "binary_parameters=false", "binary_parameters=0"} {
		db, err := ledger.Open(context.Background(), base+sep+off)
		var ue *ledger.URLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "binary_parameters") || db != nil {
			t.Errorf("Open with %s = %v, %v; want a *URLError naming binary_parameters", off, db, err)
		}
	}
}

// withoutBinaryParameters returns pgtest's dsn without the
// binary_parameters it adds, as an operator writes a URL.
func withoutBinaryParameters(t *testing.T, dsn string) string {
	t.Helper()
	for _, s := range []string{"&binary_parameters=yes", "binary_parameters=yes&", "?binary_parameters=yes", " binary_parameters=yes"} {
		dsn = strings.Replace(dsn, s, "", 1)
	}
	if strings.Contains(dsn, "binary_parameters") {
		t.Fatalf("binary_parameters still in the test DSN")
	}
	return dsn
}

func TestIsSplitStatement(t *testing.T) {
	t.Parallel()
	split := fmt.Errorf("claim batch: %w", &pq.Error{Code: "26000", Message: "unnamed prepared statement does not exist"})
	if !ledger.IsSplitStatement(split) {
		t.Errorf("IsSplitStatement(%v) = false, want true", split)
	}
	for _, err := range []error{nil, errors.New("26000"), &pq.Error{Code: "23505"}} {
		if ledger.IsSplitStatement(err) {
			t.Errorf("IsSplitStatement(%v) = true, want false", err)
		}
	}
}
