package receive

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// The receiver's HTTP limits: a slow client cannot hold a worker longer
// than these.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

// Serve answers on ln until ctx is done, then drains (Drain: readyz 503,
// the listener closed) and waits up to grace for the requests in flight;
// past it, their connections are cut and their transactions roll back
// (the providers retry what got no answer). A request's transaction is
// not cancelled by ctx: it commits and answers within grace.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.Drain()
	s.cfg.Log.Info().Dur("grace", grace).Msg("scan receive: draining in-flight requests")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
		s.cfg.Log.Warn().Err(err).Msg("scan receive: grace period over; cut the requests still in flight (not acknowledged: the providers retry them)")
		return nil
	}
	s.cfg.Log.Info().Msg("scan receive: drained")
	return nil
}

// ListenAndServe listens on addr (host:port), logs the address and the
// providers it serves (Configured), and serves there (Serve).
func (s *Server) ListenAndServe(ctx context.Context, addr string, grace time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.cfg.Log.Info().Str("addr", ln.Addr().String()).Strs("providers", s.Configured()).Msg("scan receive: listening")
	return s.Serve(ctx, ln, grace)
}
