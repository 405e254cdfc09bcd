package job_test

import (
	"errors"
	"testing"
	"time"

	"scan/internal/job"
	"scan/internal/policy"
	"scan/internal/scan"
)

// The built-in policy renders; a setting the renderer cannot take is a
// *scan.ConfigError naming the policy's field (exit 2 in cmd/scan).
func TestRendererNamesTheField(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	if _, err := job.Renderer(mustDefault(t, now)); err != nil {
		t.Fatalf("the built-in policy: %v", err)
	}
	for field, spoil := range map[string]func(*policy.Policy){
		"provider":          func(p *policy.Policy) { p.Provider = "pigeon" },
		"default_time_zone": func(p *policy.Policy) { p.DefaultTimeZone = "Mars/Olympus_Mons" },
	} {
		pol := mustDefault(t, now)
		spoil(pol)
		_, err := job.Renderer(pol)
		var ce *scan.ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%s: %v, want a *scan.ConfigError naming it", field, err)
		}
	}
}

func mustDefault(t *testing.T, now time.Time) *policy.Policy {
	t.Helper()
	pol, err := policy.LoadAt("", now)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}
