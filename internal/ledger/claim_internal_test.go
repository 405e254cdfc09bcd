package ledger

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"scan/internal/notice"
	"scan/internal/pgtest"
)

// claimArrays sends the server exactly what the literals pq.Array wrote
// for the columns as string slices did (before the columns were binary
// arrays), element for element as the statement reads them (date[],
// int4[], timestamptz[], text[]), whatever the values hold (quotes,
// backslashes, braces, commas, spaces, "NULL", empty strings, UTF-8), and
// claimMonths names each month of the batch once.
func TestClaimArraysMatchPQ(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	types := []string{"text", "text", "text", "date", "int4", "timestamptz", "timestamptz", "text", "text", "text", "text", "text"}
	rng := rand.New(rand.NewPCG(7, 8))
	words := []string{"", "a", `"`, `\`, `a"b\c`, "{x,y}", "NULL", "null", " sp ace ", "é漢字", "\t", strings.Repeat(`\"`, 20)}
	word := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	for _, n := range []int{1, 2, 7, 1000} {
		claims := make([]Claim, n)
		var hexes []string
		for i := range claims {
			claims[i] = Claim{
				Key: word(), Domain: word(), MessageID: word(), CancelToken: word(),
				Rule: word(), TimeZone: word(),
				Tuple: notice.Tuple{SubscriptionID: word(), Kind: word(),
					PeriodStart: time.Date(2020+rng.IntN(10), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), 0, 0, 0, 0, time.UTC),
					Revision:    rng.IntN(5)},
				// not a tie to the microsecond, which the server's rounding of
				// a decimal fraction in a double does not settle one way
				RenewsAt:       time.Unix(rng.Int64N(4e9), 1000*rng.Int64N(1e6)+rng.Int64N(499)).In(time.FixedZone("x", 3600*rng.IntN(5))),
				WindowClosesAt: time.Unix(rng.Int64N(4e9), 0),
			}
			switch rng.IntN(3) {
			case 0: // nil: no digest
			case 1:
				claims[i].AddressHMAC = []byte{}
			default:
				claims[i].AddressHMAC = []byte(word() + "x")
			}
			hexes = append(hexes, hex.EncodeToString(claims[i].AddressHMAC))
		}
		cols := make([][]string, 12)
		months := map[string]bool{}
		for _, c := range claims {
			for i, v := range []string{c.Key, c.SubscriptionID, c.Kind, c.PeriodStart.Format(dateLayout), strconv.Itoa(c.Revision),
				c.RenewsAt.UTC().Format(tsLayout), c.WindowClosesAt.UTC().Format(tsLayout), c.Domain, c.MessageID, c.CancelToken,
				c.Rule, c.TimeZone} {
				cols[i] = append(cols[i], v)
			}
			months[c.PeriodStart.Format("2006-01")+"-01"] = true
		}
		var buf pgArray
		got, err := claimArrays(&buf, claims)
		if err != nil {
			t.Fatal(err)
		}
		for i, col := range cols {
			want, err := pq.Array(col).(driver.Valuer).Value()
			if err != nil {
				t.Fatal(err)
			}
			var same bool
			q := `SELECT $1::` + types[i] + `[] IS NOT DISTINCT FROM $2::` + types[i] + `[]`
			if err := db.QueryRowContext(context.Background(), q, got[i], want).Scan(&same); err != nil || !same {
				t.Fatalf("n=%d, column %d (%s[]): the binary array differs from %q: %v", n, i+1, types[i], want, err)
			}
		}
		// $18, the digests: bytea[], NULL where the hex text[] it replaced
		// held "" (nil or empty), as the statement's decode(NULLIF(h, ''))
		// read it.
		var same bool
		if err := db.QueryRowContext(context.Background(), `SELECT $1::bytea[] IS NOT DISTINCT FROM
			(SELECT array_agg(decode(NULLIF(h, ''), 'hex') ORDER BY i) FROM unnest($2::text[]) WITH ORDINALITY AS x(h, i))`,
			got[12], pq.Array(hexes)).Scan(&same); err != nil || !same {
			t.Fatalf("n=%d, digests: the bytea[] differs from %q: %v", n, hexes, err)
		}
		gotMonths := claimMonths(claims)
		if len(gotMonths) != len(months) {
			t.Errorf("n=%d: claimMonths %v, want the %d months %v", n, gotMonths, len(months), months)
		}
		for _, m := range gotMonths {
			if !months[m] {
				t.Errorf("n=%d: claimMonths names %s, not a month of the batch", n, m)
			}
		}
	}
}
