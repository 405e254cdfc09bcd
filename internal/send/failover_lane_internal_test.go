package send

import (
	"context"
	"testing"
)

// plain is a Sender that does not pipeline (as the HTTP and SES senders).
type plain struct{}

func (plain) Send(context.Context, *Message) (Receipt, error) { return Receipt{}, nil }
func (plain) Close() error                                    { return nil }

// The Dispatcher gives lanes to a Failover only when one of its senders
// pipelines; a list of senders that do not is sent as each alone would be.
func TestPipelinerOf(t *testing.T) {
	t.Parallel()
	smtp, err := NewSMTP(SMTPConfig{URL: "smtp://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer smtp.Close()
	fo := func(ss ...Sender) Sender {
		var named []Named
		for i, s := range ss {
			named = append(named, Named{Name: string(rune('a' + i)), Sender: s})
		}
		f, err := NewFailover(FailoverConfig{Senders: named})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		name string
		s    Sender
		want bool
	}{
		{"smtp", smtp, true},
		{"plain", plain{}, false},
		{"plain,plain", fo(plain{}, plain{}), false},
		{"smtp,plain", fo(smtp, plain{}), true},
		{"plain,smtp", fo(plain{}, smtp), true},
	} {
		if _, got := pipelinerOf(c.s); got != c.want {
			t.Errorf("%s: pipelines %v, want %v", c.name, got, c.want)
		}
	}
}
