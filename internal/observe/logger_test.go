package observe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNewLogger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level     string
		debug, ok bool
	}{{"", false, true}, {"debug", true, true}, {"WARN", false, true}, {"verbose", false, false}, {"trace", false, false}, {"fatal", false, false}} {
		var buf bytes.Buffer
		log, err := NewLogger(&buf, false, tc.level, "v9.9.9")
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), `"`+tc.level+`"`)) {
			t.Errorf("level %q: %v; want accepted: %v, else an error naming it", tc.level, err, tc.ok)
			continue
		}
		log.Debug().Msg("d")
		log.Warn().Msg("w")
		if !tc.ok {
			if buf.Len() != 0 {
				t.Errorf("level %q: the refused logger wrote %q", tc.level, buf.String())
			}
			continue
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if want := map[bool]int{true: 2, false: 1}[tc.debug]; len(lines) != want {
			t.Errorf("level %q: %d lines, want %d: %q", tc.level, len(lines), want, buf.String())
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &line); err != nil || line["version"] != "v9.9.9" || line["time"] == nil {
			t.Errorf("level %q: first line %s (%v); want JSON with version and time", tc.level, lines[0], err)
		}
	}
}

func TestCheckPushURL(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{"": true, "http://pushgateway.monitoring:9091": true, "https://gw": true,
		"pushgateway:9091": false, "ftp://gw": false, "http://": false, "http://gw:port": false} {
		if err := CheckPushURL(raw); (err == nil) != ok {
			t.Errorf("CheckPushURL(%q) = %v, want accepted: %v", raw, err, ok)
		}
	}
}
