// Package senders builds the senders a pass sends through from the
// operator's settings: the email sender that SCAN_SENDER names (the
// outbox, SMTP, an HTTP endpoint, Amazon SES), or a send.Failover along
// a list of them, and the sms channel's Twilio client. It validates every
// setting before anything is sent, and refuses an endpoint a pass must
// not reach (a real host outside production without a staging redirect,
// plain http:// off loopback). A wrong setting is a *ConfigError naming
// the variable.
package senders

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"scan/internal/provider"
	"scan/internal/provider/registry"
	"scan/internal/provider/ses"
	"scan/internal/send"
	"scan/internal/usage"
)

// The senders SCAN_SENDER (--sender) names: how a pass's notices leave.
const (
	Outbox = "outbox"             // files in SCAN_OUTBOX_DIR, for staging and tests
	SMTP   = "smtp"               // SMTP_URL
	HTTP   = "http"               // one JSON POST per notice to SCAN_HTTP_URL
	SES    = string(provider.SES) // the Amazon SES API
)

// Names lists them, in the order the usage gives them.
var Names = []string{Outbox, SMTP, HTTP, SES}

// ConfigError is a setting a sender cannot take; Field names the
// variable.
type ConfigError = usage.Error

// List reads SCAN_SENDER (--sender): one sender's name, or an ordered
// list of them, comma-separated ("ses,smtp"), that the pass fails over
// along (send.Failover, issue 36). Each name is one of Names and appears
// once. In a list, a sender that is itself an email provider (ses) must
// be the policy's provider: the renderer writes that provider's
// correlation headers into every message, whichever sender takes it, so
// the events of a sender needing another provider's would not name their
// notice. A single name is taken as it always was.
func List(raw, policyProvider string) ([]string, error) {
	names := strings.Split(raw, ",")
	for i, name := range names {
		name = strings.TrimSpace(name)
		names[i] = name
		switch {
		case !slices.Contains(Names, name):
			return nil, fmt.Errorf("%q is not one of %s", name, strings.Join(Names, ", "))
		case slices.Index(names, name) < i:
			return nil, fmt.Errorf("%q is listed twice in %q", name, raw)
		}
	}
	if len(names) == 1 {
		return names, nil
	}
	for _, name := range names {
		if p, ok := registry.Lookup(name); ok && p.Correlation != nil && name != policyProvider {
			return nil, fmt.Errorf("%s in the list %q needs its own correlation headers, but the policy's provider is %q: set provider: %s, or leave %s out of the list",
				name, raw, policyProvider, name, name)
		}
	}
	return names, nil
}

// Config is what Prepare reads the senders' settings with.
type Config struct {
	Names  []string            // the senders, in failover order (List)
	Getenv func(string) string // the settings
	// Production (SCAN_ENVIRONMENT=production) lets a sender reach a host
	// other than loopback; so does a staging Redirect (SCAN_REDIRECT_TO).
	Production bool
	Redirect   string
	// Pool is how many sends each sender runs at once (the policy's
	// concurrency); ConfigurationSet is SES's (the policy's ses section).
	Pool             int
	ConfigurationSet string
}

// Set is the validated settings of a pass's senders: New builds them.
type Set struct {
	cfg                Config
	outboxDir, smtpURL string
	httpURL            string
	aws                aws.Config // with sender ses
}

// Prepare reads and checks what each sender of cfg.Names needs: the
// outbox directory, or an endpoint the pass may reach.
func Prepare(cfg Config) (*Set, error) {
	s := &Set{cfg: cfg, outboxDir: cfg.Getenv("SCAN_OUTBOX_DIR")}
	if s.outboxDir == "" {
		s.outboxDir = "./outbox"
	}
	for _, name := range cfg.Names {
		var err error
		switch name {
		case SMTP:
			s.smtpURL, err = s.endpoint(name, "SMTP_URL", "smtp://[user:pass@]host:port or smtps://...", "smtp", "smtps")
		case HTTP:
			s.httpURL, err = s.endpoint(name, "SCAN_HTTP_URL", "the endpoint that receives one JSON POST per notice", "http", "https")
		case SES:
			err = s.prepareSES()
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Names returns the senders' names, in failover order.
func (s *Set) Names() []string { return s.cfg.Names }

// endpoint reads the URL of the sender's endpoint from variable: required
// (what says what it takes), with one of schemes and a host, and one the
// pass may reach (checkRemote).
func (s *Set) endpoint(sender, variable, what string, schemes ...string) (string, error) {
	raw := s.cfg.Getenv(variable)
	if raw == "" {
		return "", usage.Errorf(variable, "required with --sender %s: %s", sender, what)
	}
	u, _ := url.Parse(raw)
	if u == nil || !slices.Contains(schemes, u.Scheme) {
		return "", usage.Errorf(variable, "scheme must be %s:// or %s://", schemes[0], schemes[1])
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", usage.Errorf(variable, "needs a host, e.g. smtp://user:pass@mail.example.com:587")
	}
	return raw, s.checkRemote(variable, u)
}

// checkRemote refuses an endpoint a pass must not reach: a host other
// than loopback outside production without a redirect (staging), and,
// as SMTP requires STARTTLS off loopback, plain http:// off loopback:
// addresses, messages and any password in the URL never cross the
// network in the clear.
func (s *Set) checkRemote(field string, u *url.URL) error {
	host := u.Hostname()
	if !send.IsLoopback(host) && !s.cfg.Production && s.cfg.Redirect == "" {
		return usage.Errorf(field, "refusing to deliver to %s outside production: set SCAN_ENVIRONMENT=production, or SCAN_REDIRECT_TO=address for staging", host)
	}
	if u.Scheme == "http" && !send.IsLoopback(host) {
		return usage.Errorf(field, "plain http:// to %s would send recipients and credentials in the clear: use https://", host)
	}
	return nil
}

// prepareSES resolves the AWS configuration through the SDK's standard
// chain (environment, shared config files, IRSA web identity, instance
// role) and checks what can be checked before a pass: a region, and an
// endpoint that may be reached (checkRemote, as for SMTP and HTTP).
// AWS_REGION and the endpoint variables are read through Getenv so that
// they are checked like every other variable.
func (s *Set) prepareSES() error {
	var opts []func(*config.LoadOptions) error
	if r := s.cfg.Getenv("AWS_REGION"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	field, endpoint := "AWS_ENDPOINT_URL_SESV2", s.cfg.Getenv("AWS_ENDPOINT_URL_SESV2")
	if endpoint == "" {
		field, endpoint = "AWS_ENDPOINT_URL", s.cfg.Getenv("AWS_ENDPOINT_URL")
	}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
			return usage.Errorf(field, "%q is not an http(s) URL", endpoint)
		}
		if err := s.checkRemote(field, u); err != nil {
			return err
		}
		opts = append(opts, config.WithBaseEndpoint(endpoint))
	} else if !s.cfg.Production && s.cfg.Redirect == "" {
		return usage.Errorf("SCAN_SENDER", "refusing to deliver through Amazon SES outside production: set SCAN_ENVIRONMENT=production, or SCAN_REDIRECT_TO=address for staging")
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return usage.Errorf("AWS_CONFIG_FILE", "AWS configuration: %v", err)
	}
	if cfg.Region == "" {
		return usage.Errorf("AWS_REGION", "required with --sender ses (or a region in the shared AWS config)")
	}
	s.aws = cfg
	return nil
}

// New builds the pass's email sender: the one of the names, or a
// send.Failover over the senders of the list, in their order. The caller
// closes it once the pass is over.
func (s *Set) New() (send.Sender, error) {
	if len(s.cfg.Names) == 1 {
		return s.newOne(s.cfg.Names[0])
	}
	named := make([]send.Named, 0, len(s.cfg.Names))
	for _, name := range s.cfg.Names {
		one, err := s.newOne(name)
		if err != nil {
			for _, n := range named {
				_ = n.Sender.Close()
			}
			return nil, err
		}
		named = append(named, send.Named{Name: name, Sender: one})
	}
	return send.NewFailover(send.FailoverConfig{Senders: named})
}

// newOne builds the sender name names.
func (s *Set) newOne(name string) (send.Sender, error) {
	switch name {
	case SMTP:
		return send.NewSMTP(send.SMTPConfig{URL: s.smtpURL, Pool: s.cfg.Pool})
	case HTTP:
		return send.NewHTTP(send.HTTPConfig{URL: s.httpURL, Pool: s.cfg.Pool})
	case SES:
		return ses.NewSender(ses.SenderConfig{AWS: s.aws, ConfigurationSet: s.cfg.ConfigurationSet, Pool: s.cfg.Pool})
	default:
		if err := os.MkdirAll(s.outboxDir, 0o755); err != nil {
			return nil, fmt.Errorf("outbox %s: %w", s.outboxDir, err)
		}
		return send.NewOutbox(s.outboxDir)
	}
}
