package ses

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"scan/internal/notice"
	"scan/internal/send"
)

// SenderConfig configures the Amazon SES v2 sender.
type SenderConfig struct {
	// AWS is the SDK configuration: region, credentials and endpoint, as
	// config.LoadDefaultConfig resolves them (environment, shared files,
	// IRSA web identity in Kubernetes, instance roles). Its Retryer is
	// replaced, and its HTTPClient (nil, or the *awshttp.BuildableClient
	// the loader builds for AWS_CA_BUNDLE) gives the transport that NewSender
	// sizes: its TLS roots are kept.
	AWS aws.Config
	// ConfigurationSet, when set, is the configuration set of every
	// message (its event destinations publish the events reconcile reads).
	ConfigurationSet string
	// Timeout bounds one Send. Default send.DefaultSendTimeout.
	Timeout time.Duration
	// Pool is the most connections open to the endpoint, kept alive
	// between requests; give it the Dispatcher's Concurrency. Default
	// send.DefaultConcurrency. Ignored with Transport.
	Pool int
	// Transport is the HTTP transport under the SDK, used as given.
	// Default: the SDK's own transport (from AWS.HTTPClient, or the SDK's
	// default), keeping Pool connections alive (IdleConnTimeout) and
	// attempting HTTP/2.
	Transport http.RoundTripper
}

// Sender sends each message through Amazon SES v2 SendEmail as raw content:
// the bytes Render produced, byte for byte, with the notice key as the
// email tag notice_key and the attempt as the tag notice_attempt (which
// SES events carry as mail.tags.notice_key and mail.tags.notice_attempt).
// A Sender is safe for concurrent use.
//
// The SDK never retries: a request whose answer was lost may have been
// accepted, and sending it again would be a duplicate. Outcomes:
//
//   - a MessageId: sent, and the id is the send.Receipt's ProviderID;
//   - throttling (TooManyRequests, LimitExceeded, HTTP 429), an HTTP 5xx
//     answer, or a request that never fully left: send.Transient;
//   - MessageRejected, MailFromDomainNotVerified, BadRequest (an invalid
//     recipient) or another 4xx answer: send.Permanent;
//   - SendingPaused, AccountSuspended, a configuration set SES does not
//     know, credentials the SDK cannot find or sign with: send.Transient with
//     send.ErrMisconfigured (nothing can be sent; the pass should stop);
//   - a timeout, a lost connection or an unreadable answer after the
//     request left: send.Unknown (the claim stays quarantined).
type Sender struct {
	transport http.RoundTripper
	client    *sesv2.Client
	configSet string
	timeout   time.Duration
}

// NewSender returns an SES sender. It requires a region.
func NewSender(cfg SenderConfig) (*Sender, error) {
	if cfg.AWS.Region == "" {
		return nil, errors.New("send: SenderConfig.AWS has no region")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = send.DefaultSendTimeout
	}
	if cfg.Pool < 0 {
		return nil, fmt.Errorf("send: SenderConfig.Pool %d is negative", cfg.Pool)
	}
	if cfg.Pool == 0 {
		cfg.Pool = send.DefaultConcurrency
	}
	tr := cfg.Transport
	if tr == nil {
		var base *awshttp.BuildableClient
		switch c := cfg.AWS.HTTPClient.(type) {
		case nil:
			base = awshttp.NewBuildableClient()
		case *awshttp.BuildableClient:
			base = c
		default:
			return nil, fmt.Errorf("send: SenderConfig.AWS.HTTPClient is a %T, not the SDK's buildable client: give SenderConfig.Transport", c)
		}
		// A copy of the SDK's transport, with the roots of AWS_CA_BUNDLE
		// if the loader added them, and the SDK's dialer and timeouts.
		t := base.GetTransport()
		if t.TLSClientConfig != nil && t.TLSClientConfig.InsecureSkipVerify {
			return nil, errors.New("send: SenderConfig.AWS.HTTPClient: InsecureSkipVerify is not allowed")
		}
		send.SizeTransport(t, cfg.Pool)
		tr = t
	}
	awsCfg := cfg.AWS.Copy()
	awsCfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	awsCfg.RetryMaxAttempts = 1
	_, std := tr.(*http.Transport)
	awsCfg.HTTPClient = &http.Client{Transport: wroteTracker{next: tr, waitWrite: std}}
	return &Sender{
		transport: tr,
		client: sesv2.NewFromConfig(awsCfg, func(o *sesv2.Options) {
			o.Retryer = aws.NopRetryer{}
			o.APIOptions = append(o.APIOptions, trimSendEmail)
		}),
		configSet: cfg.ConfigurationSet,
		timeout:   cfg.Timeout,
	}, nil
}

// String names the sender for logs.
func (s *Sender) String() string { return string(Name) }

// unusedSESMiddleware names the steps of the SDK's SendEmail stack that do
// work on every call for nothing this sender uses; trimSendEmail removes
// them (read from aws-sdk-go-v2 v1.48 and service/sesv2 v1.79). Each
// would otherwise run once per notice, at concurrency in the hundreds.
// What SES needs stays: validation, serialization, endpoint resolution,
// the User-Agent, the payload hash and SigV4 signing, and the error and
// request-id handling that classifySES reads.
var unusedSESMiddleware = []struct{ step, id string }{
	// A random UUID (read from crypto/rand) in Amz-Sdk-Invocation-Id, so
	// that AWS can tie the retries of one call together: the SDK never
	// retries here, and a new Send is a new call anyway.
	{"build", "ClientRequestID"},
	// Copies _X_AMZN_TRACE_ID into X-Amzn-Trace-Id inside AWS Lambda
	// only; scan runs as a Kubernetes Job.
	{"build", "RecursionDetection"},
	// Logs the wire request and response when the client's ClientLogMode
	// asks for it. The request carries the raw message (addresses, names):
	// it must never reach a log, whatever a configuration says.
	{"deserialize", "RequestResponseLogger"},
	// The retry loop. With NopRetryer it makes one attempt, yet per call
	// it clones the request and its headers, opens attempt spans and
	// metrics, clones the response metadata and sets the informational
	// Amz-Sdk-Request header: measured at concurrency 256, about 4 MiB of
	// peak RSS. Its one other use is the clock-skew correction learnt from
	// SES's Date header (with RecordResponseTiming below), applied to the
	// next signatures. It cannot help here: a clock off by more than SigV4
	// accepts fails the first request with one of the SDK's clock-skew
	// codes (retry.clockSkewCodes; SES, a modern service, answers
	// InvalidSignatureException), which classifySES makes send.ErrMisconfigured,
	// and the pass stops on it before a corrected signature could be used.
	{"finalize", "Retry"},
	// Parses SES's Date header on every answer, for the skew correction
	// above only.
	{"deserialize", "RecordResponseTiming"},
}

// trimSendEmail removes unusedSESMiddleware from a SendEmail stack. A step
// missing from a future SDK is not an error: there is nothing to remove.
func trimSendEmail(st *middleware.Stack) error {
	for _, m := range unusedSESMiddleware {
		switch m.step {
		case "build":
			_, _ = st.Build.Remove(m.id)
		case "finalize":
			_, _ = st.Finalize.Remove(m.id)
		case "deserialize":
			_, _ = st.Deserialize.Remove(m.id)
		}
	}
	return nil
}

// Close closes the idle connections of the transport; it returns nil.
func (s *Sender) Close() error {
	if c, ok := s.transport.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	return nil
}

// Send submits m through SendEmail and classifies the answer.
func (s *Sender) Send(ctx context.Context, m *send.Message) (send.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return send.Receipt{}, &send.Error{Class: send.Transient, Err: fmt.Errorf("ses: %w: %w", send.ErrNotAttempted, err)}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(m.From),
		Destination:      &types.Destination{ToAddresses: []string{m.Notice.To}},
		Content:          &types.EmailContent{Raw: &types.RawMessage{Data: m.Raw}},
		EmailTags: []types.MessageTag{{Name: aws.String(notice.KeyField), Value: aws.String(m.Notice.Key)},
			{Name: aws.String(notice.AttemptField), Value: aws.String(strconv.Itoa(max(m.Notice.Attempt, 1)))}},
	}
	if s.configSet != "" {
		in.ConfigurationSetName = aws.String(s.configSet)
	}
	var sent atomic.Bool
	out, err := s.client.SendEmail(withWroteFlag(ctx, &sent), in)
	if err == nil {
		if out.MessageId == nil || *out.MessageId == "" {
			// Accepted (2xx) but without the id we would store: it left.
			return send.Receipt{ProviderID: "ses:" + m.MessageID}, nil
		}
		return send.Receipt{ProviderID: *out.MessageId}, nil
	}
	return send.Receipt{}, classifySES(err, sent.Load(), m.Notice.To)
}

func classifySES(err error, left bool, to string) error {
	msg := func(e error) error { return errors.New("ses: " + send.Scrub(e.Error(), to)) }
	var api smithy.APIError
	var resp *smithyhttp.ResponseError
	status := 0
	if errors.As(err, &resp) && resp.Response != nil {
		status = resp.HTTPStatusCode()
	}
	if errors.As(err, &api) && status != 0 {
		var class send.Class
		cause := msg(fmt.Errorf("%s: %s", api.ErrorCode(), api.ErrorMessage()))
		switch api.ErrorCode() {
		case "TooManyRequestsException", "LimitExceededException", "Throttling", "ThrottlingException":
			class = send.Transient
		case "SendingPausedException", "AccountSuspendedException", "NotFoundException",
			"UnrecognizedClientException", "InvalidSignatureException", "AccessDeniedException",
			"IncompleteSignature", "InvalidClientTokenId", "SignatureDoesNotMatch", "ExpiredTokenException":
			return &send.Error{Class: send.Transient, Code: status, Err: fmt.Errorf("%w: %w", send.ErrMisconfigured, cause)}
		case "MessageRejected", "MailFromDomainNotVerifiedException", "BadRequestException":
			class = send.Permanent
		default:
			switch {
			case status == 429 || status >= 500:
				class = send.Transient
			case status >= 400:
				class = send.Permanent
			default:
				class = send.Unknown
			}
		}
		return &send.Error{Class: class, Code: status, Err: cause}
	}
	if status != 0 {
		// An answer we could not read: a 5xx or 429 refused it for now,
		// another 4xx for good; a 2xx (or anything else) may have
		// accepted it.
		switch {
		case status == 429 || status >= 500:
			return &send.Error{Class: send.Transient, Code: status, Err: msg(err)}
		case status >= 400:
			return &send.Error{Class: send.Permanent, Code: status, Err: msg(err)}
		}
		return &send.Error{Class: send.Unknown, Code: status, Err: msg(err)}
	}
	var notSent *smithyhttp.RequestSendError
	if errors.As(err, &notSent) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		if left {
			return &send.Error{Class: send.Unknown, Err: fmt.Errorf("ses: no answer after the request was handed over: %w", msg(err))}
		}
		if errors.Is(err, context.Canceled) {
			return &send.Error{Class: send.Transient, Err: fmt.Errorf("%w: %w", send.ErrNotAttempted, msg(err))}
		}
		return &send.Error{Class: send.Transient, Err: fmt.Errorf("%w: %w", send.ErrUnreachable, msg(err))}
	}
	if !left {
		// Failed before anything left: credentials, signing, building the
		// request.
		return &send.Error{Class: send.Transient, Err: fmt.Errorf("%w: %w", send.ErrMisconfigured, msg(err))}
	}
	return &send.Error{Class: send.Unknown, Err: msg(err)}
}

// wroteKey carries the flag that wroteTracker sets once the whole request
// has been written to the connection.
type wroteKey struct{}

func withWroteFlag(ctx context.Context, f *atomic.Bool) context.Context {
	return context.WithValue(ctx, wroteKey{}, f)
}

// wroteTracker records, per request, whether the request left in full:
// after that, a lost answer may hide an accepted message.
//
// It also returns an answer only once the transport has finished writing
// the request. Go's transport may hand over an answer while its writer is
// still finishing the request (its last read of the body), and the SDK
// closes the request body as soon as it has the answer: the writer then
// fails and the connection is thrown away, so that about one request in a
// thousand opened a new TLS connection. It waits only on an
// *http.Transport, which reports the end of every write it starts; a
// Transport given in SenderConfig may not.
type wroteTracker struct {
	next      http.RoundTripper
	waitWrite bool
}

func (w wroteTracker) RoundTrip(req *http.Request) (*http.Response, error) {
	f, _ := req.Context().Value(wroteKey{}).(*atomic.Bool)
	wrote := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil && f != nil {
			f.Store(true)
		}
		once.Do(func() { close(wrote) })
	}}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := w.next.RoundTrip(req)
	if err == nil && w.waitWrite {
		select {
		case <-wrote:
		case <-req.Context().Done():
		}
	}
	return resp, err
}
