package cli

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"
)

// IsTerminal reports whether w is a terminal: where a listing prints a
// table by default (Output.Format) and logs are written for a person.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
