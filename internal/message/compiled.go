package message

import (
	"strings"
	"text/template/parse"
	"unicode/utf8"
)

// A compiled template is a parsed template run without reflection: a
// notice costs a walk over a few ops and the writes, where text/template
// evaluates every field and calls every html/template escaper through
// package reflect (three quarters of the template half of Render).
//
// Only templates in the subset below compile, and compileTree says so;
// every other template keeps running on text/template or html/template,
// which compiled templates must match byte for byte (a differential fuzz
// test, FuzzTemplateData, holds them to it):
//
//   - text, comments;
//   - {{.F}} for a string field F of TemplateData, and {{.}} inside a
//     {{with}} of one;
//   - {{if .F}} and {{with .F}}, with {{else}}, {{else if .F}} and
//     {{else with .F}}, on a string field;
//   - in an HTML template, the escapers html/template appended to those
//     actions for a plain string: html, attribute and RCDATA escaping,
//     the URL filter, normaliser and escaper.
type compiled struct{ ops []op }

type opKind uint8

const (
	opText opKind = iota
	opField
	opIf
	opWith
)

// An op is one step of a compiled template.
type op struct {
	kind  opKind
	text  string                // opText
	field fieldID               // opField, opIf, opWith; dot: dot
	esc   []func(string) string // opField: escapers, in order
	then  []op                  // opIf, opWith
	els   []op                  // opIf, opWith
}

// A fieldID names a string field of TemplateData, or dot.
type fieldID uint8

const (
	dot fieldID = iota
	fieldKind
	fieldName
	fieldPlan
	fieldRenewsOn
	fieldPeriodStart
	fieldCancelURL
	fieldPreferencesURL
	fieldAmount
	fieldInterval
	fieldIntervalUnit
	fieldLocale
	fieldTimeZone
)

// stringFields are the fields a compiled template can read: every string
// field of TemplateData (a test checks that none is missing, and that
// stringField reads each).
var stringFields = map[string]fieldID{
	"Kind":           fieldKind,
	"Name":           fieldName,
	"Plan":           fieldPlan,
	"RenewsOn":       fieldRenewsOn,
	"PeriodStart":    fieldPeriodStart,
	"CancelURL":      fieldCancelURL,
	"PreferencesURL": fieldPreferencesURL,
	"Amount":         fieldAmount,
	"Interval":       fieldInterval,
	"IntervalUnit":   fieldIntervalUnit,
	"Locale":         fieldLocale,
	"TimeZone":       fieldTimeZone,
}

// stringField returns the field id names: a switch, not a function value,
// so that d stays where its caller put it (on the stack).
func (d *TemplateData) stringField(id fieldID) string {
	switch id {
	case fieldKind:
		return d.Kind
	case fieldName:
		return d.Name
	case fieldPlan:
		return d.Plan
	case fieldRenewsOn:
		return d.RenewsOn
	case fieldPeriodStart:
		return d.PeriodStart
	case fieldCancelURL:
		return d.CancelURL
	case fieldPreferencesURL:
		return d.PreferencesURL
	case fieldAmount:
		return d.Amount
	case fieldInterval:
		return d.Interval
	case fieldIntervalUnit:
		return d.IntervalUnit
	case fieldLocale:
		return d.Locale
	case fieldTimeZone:
		return d.TimeZone
	}
	return ""
}

// htmlEscapers are html/template's escapers, by the name it gives them in
// an escaped tree, as they treat a plain string (TemplateData has no
// typed content: template.HTML and the like never reach them).
var htmlEscapers = map[string]func(string) string{
	"_html_template_htmlescaper":   escapeHTML,
	"_html_template_attrescaper":   escapeHTML,
	"_html_template_rcdataescaper": escapeHTML,
	"_html_template_urlfilter":     filterURL,
	"_html_template_urlnormalizer": func(s string) string { return processURL(s, true) },
	"_html_template_urlescaper":    func(s string) string { return processURL(s, false) },
}

// compileTree compiles tree, or returns nil when it leaves the subset.
// escapers is nil for a text template.
func compileTree(tree *parse.Tree, escapers map[string]func(string) string) *compiled {
	if tree == nil || tree.Root == nil {
		return nil
	}
	ops, ok := compileList(tree.Root, escapers, false)
	if !ok {
		return nil
	}
	return &compiled{ops: ops}
}

func compileList(list *parse.ListNode, escapers map[string]func(string) string, dotIsString bool) ([]op, bool) {
	if list == nil {
		return nil, true
	}
	var ops []op
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			ops = append(ops, op{kind: opText, text: string(n.Text)})
		case *parse.CommentNode:
		case *parse.ActionNode:
			o, ok := compileAction(n.Pipe, escapers, dotIsString)
			if !ok {
				return nil, false
			}
			ops = append(ops, o)
		case *parse.IfNode:
			o, ok := compileBranch(opIf, &n.BranchNode, escapers, dotIsString)
			if !ok {
				return nil, false
			}
			ops = append(ops, o)
		case *parse.WithNode:
			o, ok := compileBranch(opWith, &n.BranchNode, escapers, dotIsString)
			if !ok {
				return nil, false
			}
			ops = append(ops, o)
		default:
			return nil, false
		}
	}
	return ops, true
}

// operand compiles the one argument of a pipeline's first command: .F
// for a string field F, or dot where dot is a string.
func operand(pipe *parse.PipeNode, dotIsString bool) (fieldID, bool) {
	if pipe == nil || len(pipe.Decl) != 0 || pipe.IsAssign || len(pipe.Cmds) == 0 || len(pipe.Cmds[0].Args) != 1 {
		return dot, false
	}
	switch a := pipe.Cmds[0].Args[0].(type) {
	case *parse.FieldNode:
		if dotIsString || len(a.Ident) != 1 {
			return dot, false
		}
		f, ok := stringFields[a.Ident[0]]
		return f, ok
	case *parse.DotNode:
		return dot, dotIsString
	}
	return dot, false
}

func compileAction(pipe *parse.PipeNode, escapers map[string]func(string) string, dotIsString bool) (op, bool) {
	f, ok := operand(pipe, dotIsString)
	if !ok {
		return op{}, false
	}
	o := op{kind: opField, field: f}
	for _, c := range pipe.Cmds[1:] {
		if len(c.Args) != 1 {
			return op{}, false
		}
		id, ok := c.Args[0].(*parse.IdentifierNode)
		if !ok {
			return op{}, false
		}
		e, ok := escapers[id.Ident]
		if !ok {
			return op{}, false
		}
		o.esc = append(o.esc, e)
	}
	return o, true
}

func compileBranch(kind opKind, b *parse.BranchNode, escapers map[string]func(string) string, dotIsString bool) (op, bool) {
	f, ok := operand(b.Pipe, dotIsString)
	if !ok || len(b.Pipe.Cmds) != 1 {
		return op{}, false
	}
	o := op{kind: kind, field: f}
	if o.then, ok = compileList(b.List, escapers, dotIsString || kind == opWith); !ok {
		return op{}, false
	}
	if o.els, ok = compileList(b.ElseList, escapers, dotIsString); !ok {
		return op{}, false
	}
	return o, true
}

// execute appends the template's output for d to dst.
func (c *compiled) execute(dst []byte, d *TemplateData) []byte {
	return run(dst, c.ops, d, "")
}

func run(dst []byte, ops []op, d *TemplateData, dotValue string) []byte {
	for i := range ops {
		o := &ops[i]
		if o.kind == opText {
			dst = append(dst, o.text...)
			continue
		}
		v := dotValue
		if o.field != dot {
			v = d.stringField(o.field)
		}
		switch o.kind {
		case opField:
			for _, e := range o.esc {
				v = e(v)
			}
			dst = append(dst, v...)
		case opIf:
			if v != "" {
				dst = run(dst, o.then, d, dotValue)
			} else {
				dst = run(dst, o.els, d, dotValue)
			}
		case opWith:
			if v != "" {
				dst = run(dst, o.then, d, v)
			} else {
				dst = run(dst, o.els, d, dotValue)
			}
		}
	}
	return dst
}

// escapeHTML is html/template's htmlReplacer(s, htmlReplacementTable,
// true): what its html, attribute and RCDATA escapers do to a plain
// string.
func escapeHTML(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		var repl string
		switch r {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		}
		if repl != "" {
			if written == 0 {
				b.Grow(len(s) + 8)
			}
			b.WriteString(s[written:i])
			b.WriteString(repl)
			written = i + w
		}
		i += w
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

// filterURL is html/template's urlFilter for a plain string: a URL with a
// scheme other than http, https or mailto becomes "#ZgotmplZ".
func filterURL(s string) string {
	if scheme, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(scheme, "/") {
		if !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "mailto") {
			return "#ZgotmplZ"
		}
	}
	return s
}

// processURL is html/template's processURLOnto: it percent-encodes every
// byte that is not unreserved (RFC 3986 2.3) and, when norm, keeps
// reserved characters and valid escapes as they are.
func processURL(s string, norm bool) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte("!#$&*+,/:;=?@[]", c) >= 0:
			if norm {
				continue
			}
		case c == '-' || c == '.' || c == '_' || c == '~':
			continue
		case c == '%':
			if norm && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				continue
			}
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			continue
		}
		if written == 0 {
			b.Grow(len(s) + 16)
		}
		const lowerhex = "0123456789abcdef"
		b.WriteString(s[written:i])
		b.WriteByte('%')
		b.WriteByte(lowerhex[c>>4])
		b.WriteByte(lowerhex[c&0x0f])
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
