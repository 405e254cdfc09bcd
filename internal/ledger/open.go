package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/redact"
)

// URLError is a database URL Open cannot use: empty, of another database,
// or unparsable. Msg says what is wrong and never holds the URL, which
// may hold a password.
type URLError struct{ Msg string }

func (e *URLError) Error() string { return e.Msg }

// The pool a command keeps open on the ledger's database, and how long
// Open waits for the first connection.
const (
	maxConns    = 8
	pingTimeout = 30 * time.Second
)

// Open validates dsn, a PostgreSQL URL (postgres://user@host/db) or
// keyword string (host=... dbname=...), and connects with the policy every
// command shares: at most maxConns connections, and lib/pq's
// binary_parameters on (see below). A dsn it cannot use, one that turns
// binary_parameters off included, is a *URLError; a server it cannot
// reach is an error naming the host, never the password.
func Open(ctx context.Context, dsn string) (*sqlx.DB, error) {
	if dsn == "" {
		return nil, &URLError{"required: a PostgreSQL URL (postgres://user@host/db) or keyword string (host=... dbname=...)"}
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if _, err := url.Parse(dsn); err != nil {
			return nil, &URLError{"cannot parse the URL (expected postgres://user:password@host:port/db?sslmode=...)"}
		}
	} else if strings.Contains(dsn, "://") || !strings.Contains(dsn, "=") {
		return nil, &URLError{"not a PostgreSQL URL (postgres://...) or keyword string (host=... dbname=...)"}
	}
	var secrets redact.Redactor
	secrets.AddPasswords(dsn)
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, &URLError{"cannot parse it: " + secrets.Redact(err.Error())}
	}
	// Behind PgBouncer in transaction pooling (docs/fleet.md): lib/pq
	// sends a statement with parameters as Parse and Describe, waits for
	// the reply, then sends Bind and Execute. Outside a transaction
	// PgBouncer may hand the second half to another server connection,
	// which never saw the statement: "unnamed prepared statement does not
	// exist". binary_parameters=yes sends all four in one message, so the
	// statement runs on one server connection. It also sends a []byte
	// parameter in binary format, which the batch statements need: they
	// send their columns as binary arrays (pgArray), which a connection
	// without it would send as text the server cannot read. A URL that
	// turns it off is refused.
	if !strings.Contains(dsn, "binary_parameters") {
		cfg.BinaryParameters = true
	}
	if !cfg.BinaryParameters {
		return nil, &URLError{"binary_parameters must be on (leave it out of the URL): scan sends its batches as binary arrays, " +
			"and PgBouncer in transaction pooling needs it (docs/fleet.md)"}
	}
	conn, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, &URLError{"cannot parse it: " + secrets.Redact(err.Error())}
	}
	db := sqlx.NewDb(sql.OpenDB(conn), "postgres")
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to the database (%s): %s", redact.DSN(dsn), secrets.Redact(err.Error()))
	}
	return db, nil
}

// SplitStatementAdvice is what to do about an error IsSplitStatement
// recognises.
const SplitStatementAdvice = "a connection pooler in transaction mode (PgBouncer) ran a statement's parts on two server connections; " +
	"set binary_parameters=yes in DATABASE_URL (scan sets it on every connection it opens)"

// IsSplitStatement says whether err is what lib/pq gets behind PgBouncer
// in transaction pooling without binary_parameters: the Bind of an
// unnamed statement reached a server connection that had not parsed it.
func IsSplitStatement(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "26000" // invalid_sql_statement_name
}
