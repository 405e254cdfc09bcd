// Package message owns what a notice says: it renders a notice.Notice into
// the notice.Message the senders take. It holds the templates (embedded, or
// an operator's templates_dir before them) with their locale fallbacks,
// the compiled escapers that run the common subset of them without
// text/template, the locale's amounts, intervals and CLDR dates, the MIME
// assembly and its headers (Message-ID, List-Unsubscribe, the
// correlation headers a provider echoes), and the sms channel's bodies and
// their segment count.
//
// A Renderer is safe for concurrent use and implements notice.Renderer, so
// that the Dispatcher renders in its workers without importing any
// template code. The package imports internal/send for its two value
// types only; send never imports it.
package message
