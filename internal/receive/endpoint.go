package receive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// Endpoint is one provider's webhook, made by the provider's package.
type Endpoint struct {
	// Name is the route /events/<Name>, the metric's provider label and
	// the reconcile format of the Events a Verdict carries.
	Name string
	// Limit is the body limit in bytes: above the provider's largest
	// documented request, so that a legitimate one is never cut; beyond
	// it, 413.
	Limit int64
	// Verify checks the request as its provider documents, at now (log
	// carries the provider); nil: the endpoint's secret is not configured
	// and it accepts nothing (403). Its error is a *Refusal, or anything
	// else for a failure of ours (503).
	Verify func(r *http.Request, body []byte, now time.Time, log zerolog.Logger) (Verdict, error)
	// Challenge, when set, is the WWW-Authenticate of a 401 (basic auth).
	Challenge string
}

// Verdict is what a verified request asks for.
type Verdict struct {
	Events []byte // the events to apply (format Endpoint.Name); nil: nothing to apply
	// Settlements are events already decoded (a form post, Twilio's):
	// applied by ledger.Settle as reconcile applies the decoded events.
	Settlements []ledger.Settlement
	Result      string // with neither: what to answer (subscribed, unsubscribed, irrelevant)
	Token       *Token // a replay token to record with the events
}

// Token is a replay token (Mailgun's) to record in the transaction that
// applies its request: a token seen before with the very same body is a
// retry of a request already committed (answered 200, nothing applied),
// with another body it is refused. Tokens are kept for Keep after
// SignedAt, the oldest signature the endpoint takes.
type Token struct {
	Value    string
	SignedAt time.Time
	Keep     time.Duration
}

// serveEvents is one endpoint's handler: a worker slot, the body within
// its limit, verification, then the events applied and committed before
// the 2xx.
func (s *Server) serveEvents(ep Endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := s.log.With().Str("provider", ep.Name).Logger()
		if ep.Verify == nil {
			log.Warn().Msg("refused: the endpoint's secret is not configured")
			s.answer(w, ep, http.StatusForbidden, "refused", map[string]any{"reason": "endpoint not configured"})
			return
		}
		wait := time.NewTimer(s.cfg.BusyWait)
		defer wait.Stop()
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		case <-wait.C:
			s.answer(w, ep, http.StatusServiceUnavailable, "busy", nil)
			return
		case <-r.Context().Done():
			return
		}
		body, err := readBody(w, r, ep.Limit)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			log.Warn().Int64("limit", ep.Limit).Msg("refused: body over the limit")
			s.answer(w, ep, http.StatusRequestEntityTooLarge, "too_large", map[string]any{"limit": ep.Limit})
			return
		case err != nil:
			// The client went away or was too slow (ReadTimeout): it got
			// no answer and will retry.
			log.Info().Err(err).Msg("request body not read")
			return
		}
		res, err := s.handle(r.Context(), ep, r, body, log)
		if rf := asRefusal(err); rf != nil {
			log.Warn().Str("result", rf.Result).Str("reason", rf.Reason).Msg("refused")
			s.answer(w, ep, rf.Status, rf.Result, map[string]any{"reason": rf.Reason})
			return
		}
		if err != nil {
			log.Error().Err(err).Msg("not applied: answering 503 so that the provider retries")
			s.answer(w, ep, http.StatusServiceUnavailable, "unavailable", nil)
			return
		}
		log.Debug().Str("result", res.result).Int("settled", res.settled).Int("events", res.events).Msg("applied")
		s.answer(w, ep, http.StatusOK, res.result, map[string]any{"events": res.events, "settled": res.settled, "duplicate": res.duplicate})
	})
}

// applied is what one request did.
type applied struct {
	result                     string
	events, settled, duplicate int
}

// handle verifies the request and applies what it carries.
func (s *Server) handle(ctx context.Context, ep Endpoint, r *http.Request, body []byte, log zerolog.Logger) (applied, error) {
	v, err := ep.Verify(r, body, s.now(), log)
	if err != nil {
		return applied{}, err
	}
	if v.Events == nil && v.Settlements == nil {
		return applied{result: v.Result}, nil
	}
	return s.apply(ctx, ep, v, sha256.Sum256(body))
}

// apply applies v's events in one transaction, with its replay token when
// it has one, and returns once that transaction has committed. Events
// that are malformed after verification roll the whole request back
// (400): a provider that retries it would only be refused again.
func (s *Server) apply(ctx context.Context, ep Endpoint, v Verdict, digest [sha256.Size]byte) (applied, error) {
	var out applied
	err := ledger.WithTx(ctx, s.cfg.DB, func(tx *sqlx.Tx) error {
		now := s.now().UTC()
		if v.Token != nil {
			seen, err := ledger.TokenRecord(ctx, tx, ep.Name, v.Token.Value, digest[:], v.Token.SignedAt, now, now.Add(-v.Token.Keep))
			if err != nil {
				return err
			}
			switch seen {
			case ledger.TokenReplay:
				out = applied{result: "duplicate"}
				return nil
			case ledger.TokenReused:
				return Refused("token seen before on another request")
			}
		}
		if v.Settlements != nil {
			var err error
			out, err = s.settle(ctx, tx, now, v.Settlements)
			return err
		}
		res, _, err := reconcile.ApplyTx(ctx, tx, bytes.NewReader(v.Events), reconcile.Options{Format: ep.Name, By: s.cfg.By, Now: s.now})
		if err != nil {
			return err
		}
		if res.Malformed+res.Oversized > 0 || res.Payloads == 0 {
			reason := "no event in the body"
			if len(res.Problems) > 0 {
				reason = res.Problems[0].Reason
			}
			return Malformed("%s", reason)
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
		if rerr := ledger.ReceiptRecord(ctx, s.cfg.DB, ep.Name, out.events, s.now()); rerr != nil {
			s.log.Warn().Str("provider", ep.Name).Err(rerr).Msg("could not record the receipt for scan status; the events are committed")
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
