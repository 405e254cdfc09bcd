// Package usage is the one error type of input an operator must correct:
// a flag, an argument, an environment variable or a setting, named by
// Field, refused before anything was read or written. Every package that
// checks such input returns it (most under their own name, an alias of
// Error: senders.ConfigError, reconcile.FieldError, proof.UsageError, ...),
// so `scan` maps all of them to its usage exit code (2) by one errors.As
// instead of a list of look-alike types. A leaf: it imports nothing of ours.
package usage

import "fmt"

// Error is input to correct; Field names it. Its text is "Field: Msg".
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string { return e.Field + ": " + e.Msg }

// Errorf returns an *Error naming field, its message formatted.
func Errorf(field, format string, a ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, a...)}
}
