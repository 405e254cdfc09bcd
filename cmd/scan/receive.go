package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"scan/internal/provider/registry"
	"scan/internal/receive"
)

var receiveCommand = command{use: "receive", short: "serve the providers' event webhooks: verify, apply, commit, then answer 2xx (--listen ADDR)",
	env: []string{"DATABASE_URL", "LOG_LEVEL", "SCAN_RECEIVE_ADDR", "SENDGRID_WEBHOOK_PUBLIC_KEY", "MAILGUN_WEBHOOK_SIGNING_KEY",
		"POSTMARK_WEBHOOK_USER", "SNS_TOPIC_ARNS", "SNS_CERT_HOSTS", "TWILIO_AUTH_TOKEN"}, flags: receiveFlags}

// receiveFlags declares scan receive's flags.
func receiveFlags(fs *pflag.FlagSet) runFunc {
	listen := fs.String("listen", ":8080", "address to listen on (SCAN_RECEIVE_ADDR)")
	grace := fs.Duration("grace", 25*time.Second, "on SIGTERM, how long in-flight requests may take to finish (below the pod's terminationGracePeriodSeconds)")
	inFlight := fs.Int("max-in-flight", receive.DefaultMaxInFlight, "requests served at once (each holds one database connection)")
	return func(ctx context.Context, e *env, _ []string) error {
		return cmdReceive(ctx, e, fs, listen, grace, inFlight)
	}
}

func cmdReceive(ctx context.Context, e *env, fs *pflag.FlagSet, listen *string, grace *time.Duration, inFlight *int) error {
	l := receive.Listening{Addr: flagOrEnv(fs, "listen", *listen, e, "SCAN_RECEIVE_ADDR"), AddrField: fieldOf(fs, "listen", "SCAN_RECEIVE_ADDR"),
		Grace: *grace, MaxInFlight: *inFlight}
	if err := l.Validate(); err != nil {
		return err
	}
	log, err := newLogger(e)
	if err != nil {
		return err
	}
	eps, err := registry.Webhooks(e.getenv)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	// One transaction per request in flight: the pool holds one
	// connection for each.
	db.SetMaxOpenConns(*inFlight)
	db.SetMaxIdleConns(*inFlight)
	srv, err := receive.New(receive.Config{DB: db, Log: log, Now: e.clockNow, MaxInFlight: *inFlight, Endpoints: eps})
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(e)
	if err != nil {
		return err
	}
	defer stopProfile()
	return srv.ListenAndServe(ctx, l.Addr, l.Grace)
}
