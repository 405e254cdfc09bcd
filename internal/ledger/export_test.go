package ledger

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"

	schema "scan/sql"
)

// MigrateTo applies the embedded migrations up to version only: the
// tests build a ledger as an older release left it.
func MigrateTo(ctx context.Context, db *sql.DB, version int64) error {
	p, err := goose.NewProvider(goose.DialectPostgres, db, schema.Migrations,
		goose.WithTableName(MigrationTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// Durably is durably, for the tests that look inside a claiming
// transaction.
var Durably = durably
