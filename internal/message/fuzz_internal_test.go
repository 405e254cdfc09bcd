package message

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"text/template/parse"
	"time"

	"scan/internal/notice"
)

// fuzzTemplates are custom templates beside the shipped ones, so that the
// compiled subset is held to html/template in every context it accepts
// (text, quoted attributes, URLs, RCDATA) and in nested branches.
var fuzzTemplates = map[string]string{
	"custom.de.html.tmpl": `<title>{{.Plan}}</title><p title="{{.Name}}" class='{{.Interval}}'>{{with .Name}}{{.}}{{else with .Plan}}{{.}}{{else}}-{{end}}</p>` +
		`<a href="{{.CancelURL}}">x</a><a href="https://example.com/?q={{.Name}}&amp;l={{.Locale}}">y</a><a href="{{.Amount}}">z</a>` +
		`{{if .Amount}}{{if .Interval}}{{.Amount}} {{.Interval}}{{else}}{{.Amount}}{{end}}{{end}}{{/* comment */}}`,
	"custom.de.txt.tmpl":     `{{.Name}}|{{with .Plan}}[{{.}}]{{end}}|{{if .Amount}}{{.Amount}}{{else if .Interval}}{{.Interval}}{{else}}none{{end}}|{{.TimeZone}}`,
	"custom.de.subject.tmpl": `{{.Kind}} {{.RenewsOn}} {{.IntervalUnit}} {{.PeriodStart}}`,
	// Outside the subset: these run on text/template and html/template.
	"slow.html.tmpl":    `<p>{{.RenewsAt.Format "2006"}} {{printf "%s" .Name}}</p>`,
	"slow.txt.tmpl":     `{{$n := .Name}}{{$n}} {{.IntervalCount}}`,
	"slow.subject.tmpl": `{{len .Name}}`,
}

func fuzzRenderer(t testing.TB) *Renderer {
	t.Helper()
	fsys := mapFS(fuzzTemplates)
	r, err := NewRenderer(RenderConfig{From: "n@example.com", MessageIDDomain: "example.com",
		PreferencesURL: "https://example.com/prefs/{token}?a={token}", Templates: fsys})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// FuzzTemplateData feeds the template data path arbitrary amounts,
// currencies, locales, zones, intervals, names, plans and tokens. Render
// never panics, refuses only a name that would break a header, never puts
// a bare CR or LF in a header and never writes "<no value>"; every
// compiled template writes exactly what text/template or html/template
// writes for the same data; and the message is, byte for byte, the one
// the standard library assembles (referenceRender).
func FuzzTemplateData(f *testing.F) {
	for _, s := range [][7]string{
		{"12.99", "EUR", "de-AT", "Europe/Vienna", "month", "Ada Lovelace", "Pro"},
		{"12.99", "USD", "en-US", "America/New_York", "year", "", ""},
		{"1299", "JPY", "ja", "Asia/Tokyo", "week", "山田", "プロ"},
		{"-1", "XYZ", "not a tag", "Mars/Base", "fortnight", "<b>&'\"+", "javascript:alert(1)"},
		{"", "", "", "", "", "\x00\xff", "%zz"},
		{"1e400", "eur", "DE_at", "Local", "day", "a\r\nBcc: x@example.org", "x\ny"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], 3, s[5], s[6], "tok/+&=?")
	}
	r := fuzzRenderer(f)
	f.Fuzz(func(t *testing.T, amount, currency, locale, zone, interval string, count int, name, plan, token string) {
		n := notice.Notice{
			Key: strings.Repeat("ab", 32), To: "a@example.org", ClaimedAt: time.Unix(1e9, 0),
			Tuple: notice.Tuple{Kind: "renewal", PeriodStart: time.Unix(1e9, 0).UTC()}, RenewsAt: time.Unix(1.7e9, 0), CancelToken: token,
			Amount: amount, Currency: currency, Locale: locale, Interval: interval, IntervalCount: count,
			Name: name, Plan: plan,
		}
		if z, err := time.LoadLocation(zone); err == nil {
			n.TimeZone = z
		}
		if n.CancelToken == "" {
			n.CancelToken = "t"
		}
		for _, kind := range []string{"renewal", "custom", "slow"} {
			n.Kind = kind
			m, err := r.Render(n)
			if err != nil {
				if !errors.Is(err, ErrHeaderInjection) && !errors.Is(err, ErrHeaderTooLong) {
					t.Fatalf("Render: %v", err)
				}
				continue
			}
			checkMessage(t, m)
			checkCompiled(t, r, n)
			checkReference(t, r, n, m)
		}
	})
}

func checkMessage(t *testing.T, m *notice.Message) {
	t.Helper()
	head, _, ok := bytes.Cut(m.Raw, []byte("\r\n\r\n"))
	if !ok {
		t.Fatal("no header block")
	}
	if bytes.Contains(bytes.ReplaceAll(head, []byte("\r\n"), nil), []byte("\n")) ||
		bytes.Contains(bytes.ReplaceAll(head, []byte("\r\n"), nil), []byte("\r")) {
		t.Fatalf("bare CR or LF in the headers:\n%q", head)
	}
	for _, part := range []string{m.Subject, m.Text, m.HTML} {
		if strings.Contains(part, "<no value>") {
			t.Fatalf("<no value> in %q", part)
		}
	}
}

// checkCompiled renders n's data through every resolved template both
// ways and compares.
func checkCompiled(t *testing.T, r *Renderer, n notice.Notice) {
	t.Helper()
	n.Name, n.Plan = cut(n.Name, MaxNameLen), cut(n.Plan, MaxPlanLen)
	v := r.variantFor(n.Kind, n.Locale)
	for _, p := range []struct {
		t *tmpl
		f *localeFormat
	}{{v.subject, v.subjectFmt}, {v.text, v.textFmt}, {v.html, v.htmlFmt}} {
		if p.t.fast == nil {
			continue
		}
		d := r.data(&renderScratch{}, &n, p.f)
		fast := string(p.t.fast.execute(nil, &d))
		var slow strings.Builder
		var err error
		if p.t.html != nil {
			err = p.t.html.Execute(&slow, &d)
		} else {
			err = p.t.text.Execute(&slow, &d)
		}
		if err != nil {
			t.Fatal(err)
		}
		if fast != slow.String() {
			t.Fatalf("compiled and reflective output differ:\n%q\n%q", fast, slow.String())
		}
	}
}

// The compiled subset is what it claims: the shipped templates and the
// custom ones above compile, the slow ones do not.
func TestCompiledSubset(t *testing.T) {
	t.Parallel()
	r := fuzzRenderer(t)
	for _, set := range []*templateSet{&r.embedded, &r.dir} {
		for part, m := range map[string]map[string]*tmpl{"subject": set.subject, "txt": set.text, "html": set.html} {
			for k, tt := range m {
				if want := !strings.HasPrefix(k, "slow"); (tt.fast != nil) != want {
					t.Errorf("%s.%s: compiled = %v, want %v", k, part, tt.fast != nil, want)
				}
			}
		}
	}
	// Every string field of TemplateData can be read compiled.
	typ := reflect.TypeFor[TemplateData]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Kind() == reflect.String {
			if _, ok := stringFields[f.Name]; !ok {
				t.Errorf("stringFields lacks %s", f.Name)
			}
		}
	}
	var d TemplateData
	dv := reflect.ValueOf(&d).Elem()
	for name := range stringFields {
		dv.FieldByName(name).SetString(name)
	}
	for name, id := range stringFields {
		if got := d.stringField(id); got != name {
			t.Errorf("stringField(stringFields[%q]) reads %q", name, got)
		}
	}
	if len(stringFields) != countStrings(typ) {
		t.Errorf("stringFields has %d fields, TemplateData %d strings", len(stringFields), countStrings(typ))
	}
	// Every escaper compileTree knows is one html/template puts in the
	// custom template's tree, so the fuzz test holds each to it.
	seen := map[string]bool{}
	walkIdents(r.dir.html["custom.de"].html.Tree.Root, seen)
	for name := range htmlEscapers {
		if !seen[name] {
			t.Errorf("%s is not in the escaped custom template", name)
		}
	}
}

func walkIdents(n parse.Node, seen map[string]bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				walkIdents(c, seen)
			}
		}
	case *parse.ActionNode:
		walkIdents(n.Pipe, seen)
	case *parse.PipeNode:
		for _, c := range n.Cmds {
			for _, a := range c.Args {
				if id, ok := a.(*parse.IdentifierNode); ok {
					seen[id.Ident] = true
				}
			}
		}
	case *parse.IfNode:
		walkIdents(n.List, seen)
		walkIdents(n.ElseList, seen)
	case *parse.WithNode:
		walkIdents(n.List, seen)
		walkIdents(n.ElseList, seen)
	}
}

func countStrings(typ reflect.Type) int {
	n := 0
	for i := range typ.NumField() {
		if typ.Field(i).Type.Kind() == reflect.String {
			n++
		}
	}
	return n
}

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for k, v := range files {
		m[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return m
}
