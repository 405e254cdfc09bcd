package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
)

// goawsBinary returns goaws (github.com/Admiral-Piett/goaws, an SNS/SQS
// emulator), from PATH or the project's bin/ where .ci/run installs it,
// or skips the test (fails it under CI).
func goawsBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("goaws"); err == nil {
		return p
	}
	if p, err := filepath.Abs("../../bin/goaws"); err == nil && isExecutable(p) {
		return p
	}
	msg := "goaws not found: GOBIN=$PWD/bin go install github.com/Admiral-Piett/goaws/app/cmd@v0.4.5 && mv bin/cmd bin/goaws (.ci/run does)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// goawsConfig is goaws's configuration for one test: loopback URLs (Host
// is what its SigningCertURL and SubscribeURL name), two topics, no
// queue, no subscription (its sample configuration subscribes a public
// URL: never used here).
const goawsConfig = `Local:
  Host: 127.0.0.1
  Port: %s
  Region: us-east-1
  AccountId: "100010001000"
  LogToFile: false
  Queues: []
  Topics:
    - Name: ses-events
    - Name: someone-elses
`

const (
	goawsTopic   = "arn:aws:sns:us-east-1:100010001000:ses-events"
	goawsForeign = "arn:aws:sns:us-east-1:100010001000:someone-elses"
)

// sesDeliveryEvent is SES's Delivery event record
// (https://docs.aws.amazon.com/ses/latest/dg/event-publishing-retrieving-sns-examples.html)
// with key in mail.tags, as SES publishes it to the topic.
func sesDeliveryEvent(key string) string {
	return fmt.Sprintf(`{"eventType":"Delivery","mail":{"timestamp":"2026-11-30T02:20:52.240Z","source":"sender@example.com","sendingAccountId":"123456789012","messageId":"EXAMPLE7c191be45-%s","destination":["recipient@example.com"],"tags":{"ses:configuration-set":["notices"],"notice_key":[%q]}},"delivery":{"timestamp":"2026-11-30T02:21:04.133Z","processingTimeMillis":11893,"recipients":["recipient@example.com"],"smtpResponse":"250 2.6.0 Message received","reportingMTA":"mta.example.com"}}`, key[:16], key)
}

// goaws's SubscriptionConfirmation is confirmed by scan receive (for the
// allowed topic only), and its signed notifications (SignatureVersion 1,
// with its own certificate served from its host, an empty Subject left
// out of what it signs) settle quarantined claims; another topic's
// notifications change nothing.
func TestReceiveGoaws(t *testing.T) {
	t.Parallel()
	bin := goawsBinary(t)
	f := newFixture(t, 0, "")
	keys := quarantine(t, f, 3)

	gaddr := freeAddr(t)
	_, port, _ := strings.Cut(gaddr, ":")
	conf := filepath.Join(t.TempDir(), "goaws.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, goawsConfig, port), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &watcher{}
	g := exec.Command(bin, "-config", conf, "Local")
	g.Stdout, g.Stderr = logs, logs
	up := logs.on("GoAws listening")
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	gdone := make(chan struct{})
	go func() { _ = g.Wait(); close(gdone) }()
	t.Cleanup(func() { _ = g.Process.Kill(); <-gdone })
	select {
	case <-up:
	case <-gdone:
		t.Fatalf("goaws exited: %s", logs)
	case <-time.After(time.Minute):
		t.Fatalf("goaws does not listen: %s", logs)
	}
	goaws := "http://" + gaddr

	r := startReceiver(t, f.dsn, freeAddr(t), "SNS_TOPIC_ARNS="+goawsTopic, "SNS_CERT_HOSTS=127.0.0.1")
	action := func(v url.Values) {
		t.Helper()
		resp, err := http.PostForm(goaws+"/", v)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("goaws %s: %d %s", v.Get("Action"), resp.StatusCode, b)
		}
	}
	confirmed := r.logs.on("subscription confirmed")
	refusedTopic := r.logs.on("someone-elses")
	for _, topic := range []string{goawsTopic, goawsForeign} {
		action(url.Values{"Action": {"Subscribe"}, "TopicArn": {topic}, "Protocol": {"http"}, "Endpoint": {r.url + "/events/ses"}})
	}
	for what, ch := range map[string]<-chan struct{}{"the topic's confirmation": confirmed, "the foreign topic's refusal": refusedTopic} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s never came:\n%s\ngoaws:\n%s", what, r.logs, logs)
		}
	}
	// goaws posts each notification before it answers Publish.
	for _, k := range keys[:2] {
		action(url.Values{"Action": {"Publish"}, "TopicArn": {goawsTopic}, "Message": {sesDeliveryEvent(k)}})
	}
	action(url.Values{"Action": {"Publish"}, "TopicArn": {goawsForeign}, "Message": {sesDeliveryEvent(keys[2])}})
	states, kept := settled(t, f, keys)
	want := []ledger.State{ledger.Sent, ledger.Sent, ledger.Claimed}
	for i, k := range keys {
		if states[k] != want[i] {
			t.Errorf("notice %d: %s (%d events kept), want %s\n%s", i+1, states[k], kept[k], want[i], r.logs)
		}
	}
	if strings.Count(r.logs.String(), "subscription confirmed") != 1 {
		t.Errorf("want one subscription confirmed:\n%s", r.logs)
	}
}
