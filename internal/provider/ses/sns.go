package ses

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"scan/internal/receive"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// limit bounds a request: an SNS message is at most 256 KiB
// (https://docs.aws.amazon.com/sns/latest/dg/sns-message-and-json-formats.html);
// its envelope JSON-escapes it, which at worst doubles it.
const limit = 1 << 20

// The settings of the SNS subscription's endpoint.
const (
	// TopicsVar holds the topic ARNs (comma-separated) whose messages are
	// taken and whose subscriptions are confirmed; empty: the endpoint
	// accepts nothing.
	TopicsVar = "SNS_TOPIC_ARNS"
	// CertHostsVar holds the hosts a SigningCertURL or SubscribeURL may
	// name; empty is sns.<region>.amazonaws.com and .com.cn for the
	// region of each topic. https only, except for a loopback host.
	CertHostsVar = "SNS_CERT_HOSTS"
)

// Webhook returns the endpoint of the SNS subscription (SES event
// publishing), configured from TopicsVar and CertHostsVar (getenv); a
// topic or host that is not one is a *receive.ConfigError naming its
// setting.
func Webhook(getenv func(string) string) (receive.Endpoint, error) {
	return NewWebhook(splitList(getenv(TopicsVar)), splitList(getenv(CertHostsVar)), nil)
}

// NewWebhook returns the endpoint taking topics' messages, with
// certificates and SubscribeURLs on hosts (none: the topics' regions'),
// fetched with client (nil: a client with a 10s timeout that follows no
// redirect). No topics: an endpoint that accepts nothing.
func NewWebhook(topics, hosts []string, client *http.Client) (receive.Endpoint, error) {
	ep := receive.Endpoint{Name: string(Name), Limit: limit}
	if len(topics) == 0 {
		return ep, nil
	}
	v, err := newSNSVerifier(topics, hosts, client)
	if err != nil {
		return ep, err
	}
	ep.Verify = v.verify
	return ep, nil
}

// splitList splits a comma-separated setting, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// snsMessage is an SNS HTTP/HTTPS delivery: a Notification, a
// SubscriptionConfirmation or an UnsubscribeConfirmation
// (https://docs.aws.amazon.com/sns/latest/dg/http-notification-json.html,
// .../http-subscription-confirmation-json.html,
// .../http-unsubscribe-confirmation-json.html).
type snsMessage struct {
	Type             string `json:"Type"`
	MessageID        string `json:"MessageId"`
	Token            string `json:"Token"`
	TopicArn         string `json:"TopicArn"`
	Subject          string `json:"Subject"`
	Message          string `json:"Message"`
	Timestamp        string `json:"Timestamp"`
	SignatureVersion string `json:"SignatureVersion"`
	Signature        string `json:"Signature"`
	SigningCertURL   string `json:"SigningCertURL"`
	SubscribeURL     string `json:"SubscribeURL"`
}

// The SNS message types.
const (
	snsNotification = "Notification"
	snsSubscribe    = "SubscriptionConfirmation"
	snsUnsubscribe  = "UnsubscribeConfirmation"
)

// topicARN is the shape of an SNS topic ARN.
var topicARN = regexp.MustCompile(`^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]{1,256}$`)

// maxCerts bounds the certificate cache: SNS signs with one certificate
// per region at a time, and rotates it rarely.
const maxCerts = 16

// snsVerifier verifies SNS messages: allowed topics, allowed certificate
// hosts, the signature, and a cache of the certificates fetched. Safe for
// concurrent use.
type snsVerifier struct {
	topics map[string]bool
	hosts  map[string]bool
	client *http.Client

	mu    sync.Mutex
	certs map[string]*x509.Certificate
	// fetching is held while a certificate is fetched, so that requests
	// arriving together fetch it once.
	fetching sync.Mutex
}

// newSNSVerifier checks the topics' ARNs and fills the default hosts:
// sns.<region>.amazonaws.com and sns.<region>.amazonaws.com.cn of each
// topic's region.
func newSNSVerifier(topics, hosts []string, client *http.Client) (*snsVerifier, error) {
	v := &snsVerifier{topics: map[string]bool{}, hosts: map[string]bool{}, client: client, certs: map[string]*x509.Certificate{}}
	defaults := len(hosts) == 0
	for _, t := range topics {
		p := strings.Split(t, ":")
		if len(p) != 6 || p[0] != "arn" || p[2] != "sns" || p[3] == "" || p[5] == "" {
			return nil, &receive.ConfigError{Field: TopicsVar, Msg: fmt.Sprintf("%q is not a topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)", t)}
		}
		v.topics[t] = true
		if defaults {
			v.hosts["sns."+p[3]+".amazonaws.com"] = true
			v.hosts["sns."+p[3]+".amazonaws.com.cn"] = true
		}
	}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" || strings.ContainsAny(h, "/:@") && !isLoopbackHostPort(h) {
			return nil, &receive.ConfigError{Field: CertHostsVar, Msg: fmt.Sprintf("%q is not a host name", h)}
		}
		v.hosts[hostOnly(h)] = true
	}
	if v.client == nil {
		v.client = &http.Client{
			Timeout: 10 * time.Second,
			// A redirect could lead anywhere: the host check is on the URL
			// SNS named, and only that URL is visited.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return v, nil
}

// isLoopbackHostPort reports whether h is a loopback host with a port
// (127.0.0.1:4100), which SNS_CERT_HOSTS takes for a local emulator.
func isLoopbackHostPort(h string) bool {
	host, _, err := net.SplitHostPort(h)
	return err == nil && isLoopback(host)
}

func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkURL returns u parsed when it is https (or http to a loopback
// host), names an allowed host, and carries no credentials.
func (v *snsVerifier) checkURL(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return nil, receive.Refused("%s is not a URL", what)
	}
	host := strings.ToLower(u.Hostname())
	if !v.hosts[host] {
		return nil, receive.Refused("%s names host %q, not one of SNS_CERT_HOSTS", what, host)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(host)) {
		return nil, receive.Refused("%s is not https", what)
	}
	return u, nil
}

// canonical is the string SNS signs
// (https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html):
// name and value of each field on lines of their own, in byte order of
// the names: for a Notification Message, MessageId, Subject (only when
// there is one), Timestamp, TopicArn, Type; for the confirmations
// Message, MessageId, SubscribeURL, Timestamp, Token, TopicArn, Type.
// An empty Token is left out as an empty Subject is: goaws (an SNS
// emulator) sends one and signs without it; SNS itself always sends one.
func (m *snsMessage) canonical() []byte {
	var b strings.Builder
	add := func(k, v string, optional bool) {
		if optional && v == "" {
			return
		}
		b.WriteString(k + "\n" + v + "\n")
	}
	add("Message", m.Message, false)
	add("MessageId", m.MessageID, false)
	if m.Type == snsNotification {
		add("Subject", m.Subject, true)
	} else {
		add("SubscribeURL", m.SubscribeURL, false)
	}
	add("Timestamp", m.Timestamp, false)
	if m.Type != snsNotification {
		add("Token", m.Token, true)
	}
	add("TopicArn", m.TopicArn, false)
	add("Type", m.Type, false)
	return []byte(b.String())
}

// verifySignature checks m's signature with cert: SignatureVersion 1 is
// RSA PKCS#1 v1.5 over SHA1 of the canonical string, 2 over SHA256.
func verifySignature(m *snsMessage, cert *x509.Certificate) error {
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return receive.Refused("signing certificate has no RSA key")
	}
	sig, err := base64.StdEncoding.DecodeString(m.Signature)
	if err != nil {
		return receive.Refused("signature is not base64")
	}
	var h crypto.Hash
	var sum []byte
	switch m.SignatureVersion {
	case "1":
		s := sha1.Sum(m.canonical())
		h, sum = crypto.SHA1, s[:]
	case "2":
		s := sha256.Sum256(m.canonical())
		h, sum = crypto.SHA256, s[:]
	default:
		return receive.Refused("SignatureVersion %q is neither 1 nor 2", m.SignatureVersion)
	}
	if rsa.VerifyPKCS1v15(pub, h, sum, sig) != nil {
		return receive.Refused("signature does not verify")
	}
	return nil
}

// cert returns the certificate of u, from the cache or fetched. A fetch
// that fails is an error (503: SNS retries); a body that is no PEM
// certificate, or a certificate outside its validity (unless it comes
// from a loopback host), a refusal.
func (v *snsVerifier) cert(r *http.Request, u *url.URL, now time.Time) (*x509.Certificate, error) {
	key := u.String()
	c := v.cached(key)
	if c == nil {
		v.fetching.Lock()
		defer v.fetching.Unlock()
		if c = v.cached(key); c == nil {
			var err error
			if c, err = v.fetch(r, key); err != nil {
				return nil, err
			}
			v.mu.Lock()
			if len(v.certs) >= maxCerts {
				clear(v.certs)
			}
			v.certs[key] = c
			v.mu.Unlock()
		}
	}
	// An emulator's certificate (goaws makes one valid for 5 seconds from
	// its start) is taken outside its validity; SNS's own never is.
	if (now.Before(c.NotBefore) || now.After(c.NotAfter)) && !isLoopback(u.Hostname()) {
		return nil, receive.Refused("signing certificate is outside its validity")
	}
	return c, nil
}

func (v *snsVerifier) cached(key string) *x509.Certificate {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.certs[key]
}

func (v *snsVerifier) fetch(r *http.Request, u string) (*x509.Certificate, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u, nil)
	if err != nil {
		return nil, receive.Refused("SigningCertURL: %v", err)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the signing certificate: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the signing certificate: HTTP %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("fetch the signing certificate: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, receive.Refused("SigningCertURL does not hold a PEM certificate")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, receive.Refused("signing certificate: %v", err)
	}
	return c, nil
}

// verify checks an SNS delivery as SNS documents
// (https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html
// and .../SendMessageToHttp.prepare.html): an allowed topic first (a
// foreign topic costs no fetch), a SigningCertURL of an allowed host, the
// signature with that certificate, then by type: a Notification's Message
// (the SES event) is applied as format ses; a SubscriptionConfirmation is
// confirmed by visiting its SubscribeURL (an allowed host too); an
// UnsubscribeConfirmation is logged.
func (v *snsVerifier) verify(r *http.Request, body []byte, now time.Time, log zerolog.Logger) (receive.Verdict, error) {
	var m snsMessage
	if err := json.Unmarshal(body, &m); err != nil || m.Type == "" {
		return receive.Verdict{}, receive.Unverified("not an SNS message")
	}
	if m.Signature == "" || m.SigningCertURL == "" {
		return receive.Verdict{}, receive.Unverified("SNS message without a signature")
	}
	if h := r.Header.Get("X-Amz-Sns-Message-Type"); h != "" && h != m.Type {
		return receive.Verdict{}, receive.Refused("x-amz-sns-message-type does not match the message's Type")
	}
	if !v.topics[m.TopicArn] {
		// The topic is named in the log only when it looks like one: what
		// a sender puts there is not ours to log.
		if topicARN.MatchString(m.TopicArn) {
			return receive.Verdict{}, receive.Refused("topic %s is not one of SNS_TOPIC_ARNS", m.TopicArn)
		}
		return receive.Verdict{}, receive.Refused("TopicArn is not a topic ARN")
	}
	cu, err := v.checkURL("SigningCertURL", m.SigningCertURL)
	if err != nil {
		return receive.Verdict{}, err
	}
	cert, err := v.cert(r, cu, now)
	if err != nil {
		return receive.Verdict{}, err
	}
	if err := verifySignature(&m, cert); err != nil {
		return receive.Verdict{}, err
	}
	log = log.With().Str("topic", m.TopicArn).Logger()
	switch m.Type {
	case snsNotification:
		return receive.Verdict{Events: []byte(m.Message)}, nil
	case snsSubscribe:
		if err := v.confirm(r, &m); err != nil {
			return receive.Verdict{}, err
		}
		log.Info().Msg("subscription confirmed")
		return receive.Verdict{Result: "subscribed"}, nil
	case snsUnsubscribe:
		log.Warn().Msg("UnsubscribeConfirmation: this endpoint no longer receives the topic's events; subscribe it again to resume")
		return receive.Verdict{Result: "unsubscribed"}, nil
	}
	return receive.Verdict{}, receive.Refused("SNS message Type not handled")
}

// errConfirm is a SubscribeURL visit that failed: 503, so that SNS (or
// the operator, with ConfirmSubscription) tries again.
var errConfirm = errors.New("confirm the subscription")

// confirm visits m's SubscribeURL, once its host is checked.
func (v *snsVerifier) confirm(r *http.Request, m *snsMessage) error {
	u, err := v.checkURL("SubscribeURL", m.SubscribeURL)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return receive.Refused("SubscribeURL: %v", err)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", errConfirm, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: HTTP %d", errConfirm, resp.StatusCode)
	}
	return nil
}
