package receive_test

import (
	"errors"
	"testing"
	"time"

	"scan/internal/receive"
)

// Each rule of `scan receive`'s flags, as the error `scan` prints (exit 2).
func TestListeningValidate(t *testing.T) {
	ok := receive.Listening{Addr: ":8080", AddrField: "--listen", Grace: time.Second, MaxInFlight: 1}
	for _, tc := range []struct {
		name string
		edit func(*receive.Listening)
		want string // "" is valid
	}{
		{"valid", func(*receive.Listening) {}, ""},
		{"host and port", func(l *receive.Listening) { l.Addr = "127.0.0.1:0" }, ""},
		{"no port", func(l *receive.Listening) { l.Addr, l.AddrField = "8080", "SCAN_RECEIVE_ADDR" }, `SCAN_RECEIVE_ADDR: "8080" is not host:port (e.g. :8080)`},
		{"zero grace", func(l *receive.Listening) { l.Grace = 0 }, "--grace: must be positive"},
		{"no slots", func(l *receive.Listening) { l.MaxInFlight = 0 }, "--max-in-flight: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := ok
			tc.edit(&l)
			err := l.Validate()
			var ce *receive.ConfigError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (!errors.As(err, &ce) || err.Error() != tc.want):
				t.Fatalf("got %v, want the ConfigError %q", err, tc.want)
			}
		})
	}
}
