package receive_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"scan/internal/receive"
)

const (
	topic        = "arn:aws:sns:us-east-1:123456789012:ses-events"
	foreignTopic = "arn:aws:sns:us-east-1:999999999999:someone-elses"
)

// snsHost is a stand-in for sns.<region>.amazonaws.com on loopback: it
// serves the signing certificate (counting fetches) and the SubscribeURL
// (counting visits, by topic).
type snsHost struct {
	t       *testing.T
	key     *rsa.PrivateKey
	pem     []byte
	srv     *httptest.Server
	fetches atomic.Int32
	visits  map[string]*atomic.Int32
}

func newSNSHost(t *testing.T) *snsHost {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.us-east-1.amazonaws.com"},
		NotBefore: t0.Add(-24 * time.Hour), NotAfter: t0.Add(365 * 24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	h := &snsHost{t: t, key: k, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		visits: map[string]*atomic.Int32{topic: {}, foreignTopic: {}}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /SimpleNotificationService-test.pem", func(w http.ResponseWriter, _ *http.Request) {
		h.fetches.Add(1)
		_, _ = w.Write(h.pem)
	})
	mux.HandleFunc("GET /confirm", func(w http.ResponseWriter, r *http.Request) {
		if c := h.visits[r.URL.Query().Get("TopicArn")]; c != nil {
			c.Add(1)
		}
		_, _ = w.Write([]byte("<ConfirmSubscriptionResponse/>"))
	})
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *snsHost) certURL() string { return h.srv.URL + "/SimpleNotificationService-test.pem" }

// hostPort is the stand-in's host:port, for SNS_CERT_HOSTS.
func (h *snsHost) hostPort() string { u, _ := url.Parse(h.srv.URL); return u.Host }

// canonical is the string SNS signs, written from
// https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html
// independently of the receiver's.
func canonical(m map[string]string) string {
	names := []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	if m["Type"] != "Notification" {
		names = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
	}
	var b strings.Builder
	for _, n := range names {
		if v, ok := m[n]; ok {
			b.WriteString(n + "\n" + v + "\n")
		}
	}
	return b.String()
}

// sign signs m with key as SignatureVersion version and returns its JSON.
func sign(t *testing.T, m map[string]string, key *rsa.PrivateKey, version string) []byte {
	t.Helper()
	m["SignatureVersion"] = version
	var sig []byte
	var err error
	if version == "1" {
		s := sha1.Sum([]byte(canonical(m)))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA1, s[:])
	} else {
		s := sha256.Sum256([]byte(canonical(m)))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, s[:])
	}
	if err != nil {
		t.Fatal(err)
	}
	m["Signature"] = base64.StdEncoding.EncodeToString(sig)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sesDelivery is SES's Delivery event record
// (https://docs.aws.amazon.com/ses/latest/dg/event-publishing-retrieving-sns-examples.html),
// with our key in mail.tags.
func sesDelivery(i int) string {
	return fmt.Sprintf(`{"eventType":"Delivery","mail":{"timestamp":"2026-11-30T02:20:52.240Z","source":"sender@example.com","sendingAccountId":"123456789012","messageId":"EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-%012d","destination":["recipient@example.com"],"headersTruncated":false,"tags":{"ses:configuration-set":["notices"],"notice_key":[%q]}},"delivery":{"timestamp":"2026-11-30T02:21:04.133Z","processingTimeMillis":11893,"recipients":["recipient@example.com"],"smtpResponse":"250 2.6.0 Message received","reportingMTA":"mta.example.com"}}`, i, key(i))
}

// notification is an SNS Notification envelope
// (https://docs.aws.amazon.com/sns/latest/dg/http-notification-json.html).
func notification(h *snsHost, topicArn, message string) map[string]string {
	return map[string]string{"Type": "Notification", "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324", "TopicArn": topicArn,
		"Subject": "Amazon SES Email Event Notification", "Message": message, "Timestamp": "2026-11-30T02:21:04.200Z",
		"SigningCertURL": h.certURL(), "UnsubscribeURL": h.srv.URL + "/?Action=Unsubscribe"}
}

// confirmation is an SNS SubscriptionConfirmation
// (https://docs.aws.amazon.com/sns/latest/dg/http-subscription-confirmation-json.html).
func confirmation(h *snsHost, topicArn string) map[string]string {
	return map[string]string{"Type": "SubscriptionConfirmation", "MessageId": "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
		"Token":    "2336412f37fb687f5d51e6e241d09c805a5a57b30d712f794cc5f6a988666d92768dd60a747ba6f3beb71854e285d6ad02428b09ceece29417f1f02d609c582afbacc99c583a916b9981dd2728f4ae6fdb82efd087cc3b7849e05798d2d2785c03b0879594eeac82c01f235d0e717736",
		"TopicArn": topicArn, "Message": "You have chosen to subscribe to the topic " + topicArn + ".\nTo confirm the subscription, visit the SubscribeURL included in this message.",
		"SubscribeURL": h.srv.URL + "/confirm?Action=ConfirmSubscription&TopicArn=" + url.QueryEscape(topicArn) + "&Token=2336412f37",
		"Timestamp":    "2026-11-30T02:00:00.000Z", "SigningCertURL": h.certURL()}
}

func snsWorld(t *testing.T, n int, h *snsHost) *world {
	return newWorld(t, n, receive.Config{Endpoints: endpoints(t, "SNS_TOPIC_ARNS", topic, "SNS_CERT_HOSTS", h.hostPort())})
}

func TestSNSNotificationsSettle(t *testing.T) {
	t.Parallel()
	h := newSNSHost(t)
	w := snsWorld(t, 3, h)
	st, res := w.post("ses", sign(t, notification(h, topic, sesDelivery(1)), h.key, "1"), "x-amz-sns-message-type", "Notification")
	w.want("SignatureVersion 1", st, res, 200, "ok", "scc")
	st, res = w.post("ses", sign(t, notification(h, topic, sesDelivery(2)), h.key, "2"))
	w.want("SignatureVersion 2", st, res, 200, "ok", "ssc")
	// Without a Subject, which is then left out of what is signed.
	m := notification(h, topic, sesDelivery(3))
	delete(m, "Subject")
	st, res = w.post("ses", sign(t, m, h.key, "2"))
	w.want("no Subject", st, res, 200, "ok", "sss")
	st, res = w.post("ses", sign(t, notification(h, topic, sesDelivery(1)), h.key, "2"))
	w.want("SNS delivers it again", st, res, 200, "duplicate", "sss")
	if n := h.fetches.Load(); n != 1 {
		t.Errorf("the certificate was fetched %d times, want once (cached)", n)
	}
}

func TestSNSRefusals(t *testing.T) {
	t.Parallel()
	h, other := newSNSHost(t), newSNSHost(t)
	w := snsWorld(t, 1, h)
	alter := func(b []byte) []byte {
		var m map[string]string
		_ = json.Unmarshal(b, &m)
		m["Message"] = strings.Replace(m["Message"], `"Delivery"`, `"Bounce"`, 1)
		out, _ := json.Marshal(m)
		return out
	}
	foreignHost := notification(h, topic, sesDelivery(1))
	// SNS_CERT_HOSTS names 127.0.0.1; localhost is another host.
	foreignHost["SigningCertURL"] = strings.Replace(other.certURL(), "127.0.0.1", "localhost", 1)
	cases := []struct {
		what   string
		body   []byte
		status int
		result string
	}{
		{"a foreign certificate host", sign(t, foreignHost, other.key, "2"), 403, "refused"},
		{"a foreign topic", sign(t, notification(h, foreignTopic, sesDelivery(1)), h.key, "2"), 403, "refused"},
		{"an altered body", alter(sign(t, notification(h, topic, sesDelivery(1)), h.key, "2")), 403, "refused"},
		{"a wrong key", sign(t, notification(h, topic, sesDelivery(1)), other.key, "2"), 403, "refused"},
		{"SignatureVersion 3", sign(t, notification(h, topic, sesDelivery(1)), h.key, "3"), 403, "refused"},
		{"no signature", []byte(`{"Type":"Notification","TopicArn":"` + topic + `","Message":"{}"}`), 401, "unverified"},
		{"not JSON", []byte(`Type=Notification`), 401, "unverified"},
		{"signed, Message not JSON", sign(t, notification(h, topic, "not json"), h.key, "2"), 400, "malformed"},
	}
	for _, c := range cases {
		st, res := w.post("ses", c.body)
		w.want(c.what, st, res, c.status, c.result, "c")
	}
	if n := w.evidence(); n != 0 {
		t.Fatalf("refused requests kept %d events", n)
	}
	if n := other.fetches.Load(); n != 0 {
		t.Errorf("the foreign host's certificate was fetched %d times", n)
	}
}

// A SigningCertURL over http to a host that is not loopback is refused
// before any fetch, as is one with credentials.
func TestSNSCertURLScheme(t *testing.T) {
	t.Parallel()
	h := newSNSHost(t)
	w := newWorld(t, 1, receive.Config{Endpoints: endpoints(t, "SNS_TOPIC_ARNS", topic)})
	for _, u := range []string{"http://sns.us-east-1.amazonaws.com/cert.pem", "https://sns.us-east-1.amazonaws.com.evil.example/cert.pem", "https://user:pw@sns.us-east-1.amazonaws.com.cn/cert.pem"} {
		m := notification(h, topic, sesDelivery(1))
		m["SigningCertURL"] = u
		st, res := w.post("ses", sign(t, m, h.key, "2"))
		w.want(u, st, res, 403, "refused", "c")
	}
}

func TestSNSSubscriptionConfirmation(t *testing.T) {
	t.Parallel()
	h := newSNSHost(t)
	w := snsWorld(t, 1, h)
	st, res := w.post("ses", sign(t, confirmation(h, foreignTopic), h.key, "1"))
	w.want("a foreign topic's confirmation", st, res, 403, "refused", "c")
	c := confirmation(h, topic)
	c["SubscribeURL"] = strings.Replace(c["SubscribeURL"], "127.0.0.1", "localhost", 1)
	st, res = w.post("ses", sign(t, c, h.key, "1"))
	w.want("a SubscribeURL of another host", st, res, 403, "refused", "c")
	if n := h.visits[topic].Load() + h.visits[foreignTopic].Load(); n != 0 {
		t.Fatalf("SubscribeURL visited %d times before any allowed confirmation", n)
	}
	st, res = w.post("ses", sign(t, confirmation(h, topic), h.key, "1"))
	w.want("the topic's confirmation", st, res, 200, "subscribed", "c")
	if n := h.visits[topic].Load(); n != 1 {
		t.Fatalf("SubscribeURL visited %d times, want 1", n)
	}
	// goaws sends an empty Token, and signs without it.
	g := confirmation(h, topic)
	delete(g, "Token")
	b := sign(t, g, h.key, "1")
	b = []byte(strings.Replace(string(b), `"SignatureVersion"`, `"Token":"","SignatureVersion"`, 1))
	st, res = w.post("ses", b)
	w.want("a confirmation with an empty Token", st, res, 200, "subscribed", "c")
	u := confirmation(h, topic)
	u["Type"] = "UnsubscribeConfirmation"
	st, res = w.post("ses", sign(t, u, h.key, "2"))
	w.want("an UnsubscribeConfirmation", st, res, 200, "unsubscribed", "c")
	if n := h.visits[topic].Load(); n != 2 {
		t.Fatalf("SubscribeURL visited %d times, want 2", n)
	}
	w.counted("ses", "subscribed", 2)
	w.counted("ses", "unsubscribed", 1)
	w.counted("ses", "refused", 2)
}

// Requests arriving together fetch the certificate once.
func TestSNSCertificateFetchedOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	h := newSNSHost(t)
	w := snsWorld(t, 8, h)
	bodies := make([][]byte, 8)
	for i := range bodies {
		bodies[i] = sign(t, notification(h, topic, sesDelivery(i+1)), h.key, "2")
	}
	done := make(chan int, len(bodies))
	for _, b := range bodies {
		go func() {
			st, _ := w.post("ses", b)
			done <- st
		}()
	}
	for range bodies {
		if st := <-done; st != 200 {
			t.Errorf("answered %d", st)
		}
	}
	if n := h.fetches.Load(); n != 1 {
		t.Errorf("the certificate was fetched %d times by 8 requests together, want once", n)
	}
}
