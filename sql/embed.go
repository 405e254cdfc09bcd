// Package schema embeds the ledger's migrations (sql/NNNN_verb_noun.sql,
// append-only). The reference subscriptions table in sql/reference is for
// the demo and the tests and is not a migration.
package schema

import "embed"

// Migrations holds the goose migrations, applied in order by
// ledger.Migrate.
//
//go:embed 0*.sql
var Migrations embed.FS
