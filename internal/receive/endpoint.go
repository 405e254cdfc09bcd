package receive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/provider"
	"scan/internal/reconcile"
)

// Body limits, each above its provider's largest documented request, so
// that a legitimate request is never cut and anything beyond is 413.
const (
	// SendGrid posts events in batches of at most 768 KB
	// (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook).
	limitSendGrid = 2 << 20
	// An SNS message is at most 256 KiB
	// (https://docs.aws.amazon.com/sns/latest/dg/sns-message-and-json-formats.html);
	// its envelope JSON-escapes it, which at worst doubles it.
	limitSNS = 1 << 20
	// Mailgun and Postmark post one event per request; a Postmark Bounce
	// may include the bounced message's content, which is one of our
	// notices (a few KB), and a Mailgun event carries its headers.
	limitMailgun  = 1 << 20
	limitPostmark = 1 << 20
)

// endpoint is one provider's webhook.
type endpoint struct {
	name   string // route /events/<name> and the metric's provider label
	format string // the reconcile format of what verify returns
	limit  int64  // body limit in bytes
	// verify checks the request as its provider documents; nil: the
	// endpoint's secret is not configured and it accepts nothing.
	verify func(r *http.Request, body []byte) (verdict, error)
}

// verdict is what a verified request asks for.
type verdict struct {
	events []byte // the events to apply (format); nil: nothing to apply
	// settlements are events already decoded (a form post, Twilio's):
	// applied by ledger.Settle as reconcile applies the decoded events.
	settlements []ledger.Settlement
	result      string // with neither: what to answer (subscribed, unsubscribed)
	token       *token // a replay token to record with the events
}

// token is a replay token (Mailgun's) to record in the transaction that
// applies its request.
type token struct {
	value    string
	signedAt time.Time
}

// makeEndpoints lists the providers' endpoints. A new provider is one
// more entry: a format that package reconcile reads (or settlements the
// verifier decodes, as Twilio's status callbacks) and a verifier.
func (s *Server) makeEndpoints() []endpoint {
	eps := []endpoint{
		{name: string(provider.SES), format: string(provider.SES), limit: limitSNS},
		{name: string(provider.SendGrid), format: string(provider.SendGrid), limit: limitSendGrid},
		{name: string(provider.Mailgun), format: string(provider.Mailgun), limit: limitMailgun},
		{name: string(provider.Postmark), format: string(provider.Postmark), limit: limitPostmark},
		{name: string(provider.Twilio), format: string(provider.Twilio), limit: limitTwilio},
	}
	if s.sns != nil {
		eps[0].verify = s.verifySNS
	}
	if s.sendgrid != nil {
		eps[1].verify = s.verifySendGrid
	}
	if s.cfg.MailgunSigningKey != "" {
		eps[2].verify = s.verifyMailgun
	}
	if s.cfg.PostmarkUser != "" {
		eps[3].verify = s.verifyPostmark
	}
	if s.cfg.TwilioAuthToken != "" && s.cfg.TwilioCallbackURL != "" {
		eps[4].verify = s.verifyTwilio
	}
	return eps
}

// serveEvents is one endpoint's handler: a worker slot, the body within
// its limit, verification, then the events applied and committed before
// the 2xx.
func (s *Server) serveEvents(ep endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := s.log.With().Str("provider", ep.name).Logger()
		if ep.verify == nil {
			log.Warn().Msg("refused: the endpoint's secret is not configured")
			s.answer(w, ep.name, http.StatusForbidden, "refused", map[string]any{"reason": "endpoint not configured"})
			return
		}
		wait := time.NewTimer(s.cfg.BusyWait)
		defer wait.Stop()
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		case <-wait.C:
			s.answer(w, ep.name, http.StatusServiceUnavailable, "busy", nil)
			return
		case <-r.Context().Done():
			return
		}
		body, err := readBody(w, r, ep.limit)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			log.Warn().Int64("limit", ep.limit).Msg("refused: body over the limit")
			s.answer(w, ep.name, http.StatusRequestEntityTooLarge, "too_large", map[string]any{"limit": ep.limit})
			return
		case err != nil:
			// The client went away or was too slow (ReadTimeout): it got
			// no answer and will retry.
			log.Info().Err(err).Msg("request body not read")
			return
		}
		res, err := s.handle(r.Context(), ep, r, body)
		if rf := asRefusal(err); rf != nil {
			log.Warn().Str("result", rf.result).Str("reason", rf.reason).Msg("refused")
			s.answer(w, ep.name, rf.status, rf.result, map[string]any{"reason": rf.reason})
			return
		}
		if err != nil {
			log.Error().Err(err).Msg("not applied: answering 503 so that the provider retries")
			s.answer(w, ep.name, http.StatusServiceUnavailable, "unavailable", nil)
			return
		}
		log.Debug().Str("result", res.result).Int("settled", res.settled).Int("events", res.events).Msg("applied")
		s.answer(w, ep.name, http.StatusOK, res.result, map[string]any{"events": res.events, "settled": res.settled, "duplicate": res.duplicate})
	})
}

// applied is what one request did.
type applied struct {
	result                     string
	events, settled, duplicate int
}

// handle verifies the request and applies what it carries.
func (s *Server) handle(ctx context.Context, ep endpoint, r *http.Request, body []byte) (applied, error) {
	v, err := ep.verify(r, body)
	if err != nil {
		return applied{}, err
	}
	if v.events == nil && v.settlements == nil {
		return applied{result: v.result}, nil
	}
	return s.apply(ctx, ep, v, sha256.Sum256(body))
}

// apply applies v's events in one transaction, with its replay token when
// it has one, and returns once that transaction has committed. Events
// that are malformed after verification roll the whole request back
// (400): a provider that retries it would only be refused again.
func (s *Server) apply(ctx context.Context, ep endpoint, v verdict, digest [sha256.Size]byte) (applied, error) {
	var out applied
	err := ledger.WithTx(ctx, s.cfg.DB, func(tx *sqlx.Tx) error {
		now := s.now().UTC()
		if v.token != nil {
			seen, err := ledger.TokenRecord(ctx, tx, ep.name, v.token.value, digest[:], v.token.signedAt, now, now.Add(-s.cfg.MailgunMaxAge))
			if err != nil {
				return err
			}
			switch seen {
			case ledger.TokenReplay:
				out = applied{result: "duplicate"}
				return nil
			case ledger.TokenReused:
				return refused("token seen before on another request")
			}
		}
		if v.settlements != nil {
			var err error
			out, err = s.settle(ctx, tx, now, v.settlements)
			return err
		}
		res, _, err := reconcile.ApplyTx(ctx, tx, bytes.NewReader(v.events), reconcile.Options{Format: ep.format, By: s.cfg.By, Now: s.now})
		if err != nil {
			return err
		}
		if res.Malformed+res.Oversized > 0 || res.Payloads == 0 {
			reason := "no event in the body"
			if len(res.Problems) > 0 {
				reason = res.Problems[0].Reason
			}
			return malformed("%s", reason)
		}
		events := 0
		for _, n := range res.Events {
			events += n
		}
		out = applied{result: "ok", events: events, settled: res.Settled, duplicate: res.Duplicate}
		if events > 0 && res.Duplicate == events {
			out.result = "duplicate"
		}
		return nil
	})
	if err == nil && out.events > 0 {
		// After the commit, outside its transaction: scan status's "last
		// event the receiver committed" never holds a request's locks.
		if rerr := ledger.ReceiptRecord(ctx, s.cfg.DB, ep.name, out.events, s.now()); rerr != nil {
			s.log.Warn().Str("provider", ep.name).Err(rerr).Msg("could not record the receipt for scan status; the events are committed")
		}
	}
	return out, err
}

// readBody reads the request's body up to limit bytes (an
// *http.MaxBytesError beyond), into one buffer of the announced length
// when there is one, so that a batch is not copied as the buffer grows.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	size := int64(bytes.MinRead)
	if r.ContentLength > 0 {
		size = min(r.ContentLength, limit) + bytes.MinRead
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	return buf.Bytes(), err
}

// settle applies settlements a verifier decoded, in the request's
// transaction tx, by the rules every event goes by (ledger.Settle).
func (s *Server) settle(ctx context.Context, tx *sqlx.Tx, now time.Time, ss []ledger.Settlement) (applied, error) {
	sr, err := ledger.Settle(ctx, tx, s.cfg.By, now, ss)
	if err != nil {
		return applied{}, err
	}
	out := applied{result: "ok", events: len(ss), settled: len(sr.Changed)}
	for _, r := range sr.Each {
		if r == ledger.ResultDuplicate {
			out.duplicate++
		}
	}
	if out.duplicate == len(ss) {
		out.result = "duplicate"
	}
	return out, nil
}
