package observe

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// NewLogger builds the logger every command logs with, at level (debug,
// info, warn or error; "" is info): JSON lines on w, human-readable when
// terminal (w is a terminal's), each line with its time and the version
// of the build that wrote it. A pass logs from several goroutines
// (producer, recorder, progress): each line is one Write, never two
// interleaved, whatever w is. Another level is an error that names it.
func NewLogger(w io.Writer, terminal bool, level, version string) (zerolog.Logger, error) {
	lvl := zerolog.InfoLevel
	if level != "" {
		l, err := zerolog.ParseLevel(strings.ToLower(level))
		if err != nil || l > zerolog.ErrorLevel || l < zerolog.DebugLevel {
			return zerolog.Nop(), fmt.Errorf("%q is not one of debug, info, warn, error", level)
		}
		lvl = l
	}
	if terminal {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	return zerolog.New(zerolog.SyncWriter(w)).Level(lvl).With().Timestamp().Str("version", version).Logger(), nil
}

// CheckPushURL checks a Pushgateway's URL (PUSHGATEWAY_URL; empty: no
// push) before anything is written, so that a typo is refused at once
// rather than warned about after every pass.
func CheckPushURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("not an http(s) URL such as http://pushgateway.monitoring:9091")
	}
	return nil
}
