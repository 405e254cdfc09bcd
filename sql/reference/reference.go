// Package reference holds the reference subscriptions table (the relation
// `scan run` reads, as docs/configuration.md defines it under
// Input) for the demo and the tests. It is not a migration: production maps
// its own schema with a view.
package reference

import _ "embed"

// Subscriptions is the idempotent DDL of the reference subscriptions table
// and its window index (subscriptions.sql). It creates unqualified names, so
// it lands in the connection's search_path (a pgtest schema, for example).
//
//go:embed subscriptions.sql
var Subscriptions string
