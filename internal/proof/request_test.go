package proof

import (
	"errors"
	"testing"
	"time"
)

func TestRequestValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		req   Request
		field string // "" when valid
		msg   string
	}{
		{"no subscription", Request{Out: "x"}, "--subscription", "required (or --verify)"},
		{"no out", Request{Subscription: "s"}, "--out", "required: the directory to write the proof into"},
		{"bad channel", Request{Subscription: "s", Out: "x", Channel: "fax"}, "--channel", `"fax" is not email or sms`},
		{"bad period", Request{Subscription: "s", Out: "x", PeriodStart: "May"}, "--period-start", `"May" is not a date (YYYY-MM-DD)`},
		{"bad period with verify", Request{Verify: true, PeriodStart: "May"}, "--period-start", `"May" is not a date (YYYY-MM-DD)`},
		{"negative sample", Request{Verify: true, Sample: -1}, "--sample", "must be 0 (every notice) or more"},
		{"verify needs no subscription", Request{Verify: true, Sample: 3}, "", ""},
		{"sms", Request{Subscription: "s", Out: "x", Channel: "sms", Kind: "renewal", PeriodStart: "2026-11-01"}, "", ""},
	} {
		f, err := c.req.Validate()
		var ue *UsageError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.field != "" && (!errors.As(err, &ue) || ue.Field != c.field || ue.Msg != c.msg):
			t.Errorf("%s: %v; want %s: %s", c.name, err, c.field, c.msg)
		}
		if c.name == "sms" && (f.SubscriptionID != "s" || f.Channel != "sms" || f.Kind != "renewal" || !f.PeriodStart.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))) {
			t.Errorf("filter %+v", f)
		}
	}
}
