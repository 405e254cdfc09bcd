package send_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"scan/internal/message"
	"scan/internal/pace"
	"scan/internal/send"
)

// A pass hands claimed notices to a Dispatcher and records each Result.
func ExampleDispatcher() {
	dir, err := os.MkdirTemp("", "outbox")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	outbox, err := send.NewOutbox(dir)
	if err != nil {
		panic(err)
	}
	renderer, err := message.NewRenderer(message.RenderConfig{
		From:            "Example Box <notices@example.com>",
		MessageIDDomain: "notices.example.com",
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background() // the run: cancel it to shut down
	d, err := send.NewDispatcher(ctx, send.DispatcherConfig{
		Sender:   outbox,
		Renderer: renderer,
		Limits: pace.Limits{
			Default: pace.Bucket{PerSecond: 5, Burst: 5},
			Domains: map[string]pace.Bucket{"gmail.com": {PerSecond: 20, Burst: 20}},
			Global:  pace.Bucket{PerSecond: 100, Burst: 100},
		},
	})
	if err != nil {
		panic(err)
	}

	go func() {
		defer d.Close() // after the last Submit
		for i, to := range []string{"ada@gmail.com", "alan@example.org"} {
			n := notice(i, "")
			n.To = to
			_, n.Domain, _ = strings.Cut(to, "@")
			n.ClaimedAt = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
			if err := d.Submit(ctx, n); err != nil {
				return // not accepted: no Result will come
			}
		}
	}()
	sent := 0
	for r := range d.Results() { // one per accepted notice, then closed
		if r.Err == nil {
			sent++
		}
	}
	fmt.Println("sent", sent)
	// Output: sent 2
}
