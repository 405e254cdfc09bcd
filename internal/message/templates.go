package message

import (
	htmltemplate "html/template"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	texttemplate "text/template"

	"golang.org/x/text/language"
)

// A templateSet is the templates of one source, the embedded set or
// RenderConfig.Templates, keyed by "kind" or "kind.locale" (the locale in
// canonical BCP 47 form, "de-AT").
type templateSet struct {
	subject, text, html map[string]*tmpl
	sms                 map[string]*tmpl // <stem>.sms.tmpl: the sms channel's body (RenderSMS)
}

// A tmpl is one parsed template file, and its compiled form when it has
// one.
type tmpl struct {
	text *texttemplate.Template // a subject or text part
	html *htmltemplate.Template // an HTML part
	fast *compiled              // nil: not in the compiled subset
}

// execute appends t's output for d to dst. On an error what it returns
// may hold part of the output.
func (t *tmpl) execute(dst []byte, d *TemplateData) ([]byte, error) {
	if t.fast != nil {
		return t.fast.execute(dst, d), nil
	}
	// A copy for package reflect, so that d itself stays on its caller's
	// stack on the compiled path.
	w, data := &appendWriter{b: dst}, *d
	var err error
	if t.html != nil {
		err = t.html.Execute(w, &data)
	} else {
		err = t.text.Execute(w, &data)
	}
	return w.b, err
}

// appendWriter is an io.Writer appending to b: how a template that does
// not compile writes into Render's buffer.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Template file names: <stem>.subject.tmpl, <stem>.txt.tmpl,
// <stem>.html.tmpl, where stem is <kind> or <kind>.<locale>.
const (
	subjectSuffix = ".subject.tmpl"
	textSuffix    = ".txt.tmpl"
	htmlSuffix    = ".html.tmpl"
	smsSuffix     = ".sms.tmpl"
)

// parseTemplates parses every template file in fsys's top directory, and
// compiles those it can. Other files are ignored.
func parseTemplates(fsys fs.FS) (templateSet, error) {
	s := templateSet{subject: map[string]*tmpl{}, text: map[string]*tmpl{}, html: map[string]*tmpl{}, sms: map[string]*tmpl{}}
	names, err := fs.Glob(fsys, "*.tmpl")
	if err != nil {
		return s, err
	}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return s, err
		}
		base := path.Base(name)
		var stem string
		var m map[string]*tmpl
		switch {
		case strings.HasSuffix(base, subjectSuffix):
			stem, m = strings.TrimSuffix(base, subjectSuffix), s.subject
		case strings.HasSuffix(base, textSuffix):
			stem, m = strings.TrimSuffix(base, textSuffix), s.text
		case strings.HasSuffix(base, htmlSuffix):
			stem, m = strings.TrimSuffix(base, htmlSuffix), s.html
		case strings.HasSuffix(base, smsSuffix):
			stem, m = strings.TrimSuffix(base, smsSuffix), s.sms
		default:
			continue
		}
		t, err := parseTemplate(base, string(b), strings.HasSuffix(base, htmlSuffix))
		if err != nil {
			return s, err
		}
		m[templateKey(stem)] = t
	}
	return s, nil
}

// parseTemplate parses one template file and compiles it when it is in
// the compiled subset. An HTML template is escaped first (by executing it
// once on empty data), so that its tree carries html/template's escapers.
func parseTemplate(name, text string, html bool) (*tmpl, error) {
	if !html {
		t, err := texttemplate.New(name).Option("missingkey=error").Parse(text)
		if err != nil {
			return nil, err
		}
		return &tmpl{text: t, fast: compileTree(t.Tree, nil)}, nil
	}
	t, err := htmltemplate.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	tt := &tmpl{html: t}
	if t.Execute(io.Discard, &TemplateData{}) == nil {
		tt.fast = compileTree(t.Tree, htmlEscapers)
	}
	return tt, nil
}

// templateKey canonicalises a file name's stem: "kind.de_at" becomes
// "kind.de-AT". A stem whose last dot-separated part is not a well-formed,
// known BCP 47 tag is a kind of its own ("renewal.v2").
func templateKey(stem string) string {
	i := strings.LastIndexByte(stem, '.')
	if i < 0 {
		return stem
	}
	tag, ok := parseLocale(stem[i+1:])
	if !ok {
		return stem
	}
	return stem[:i] + "." + tag.String()
}

// parseLocale parses s as a BCP 47 tag and keeps its language, script and
// region (variants and extensions select nothing here). ok is false for a
// malformed or unknown tag and for "und".
func parseLocale(s string) (language.Tag, bool) {
	if s == "" {
		return language.Und, false
	}
	t, err := language.Parse(s)
	if err != nil {
		return language.Und, false
	}
	t, err = language.Compose(t.Raw())
	if err != nil || t.IsRoot() {
		return language.Und, false
	}
	return t, true
}

// embeddedLanguage is the language of the embedded locale-less templates
// (default.*.tmpl, the final fallback).
var embeddedLanguage = language.English

// A variant is what the templates of one (kind, locale) resolve to: the
// three templates, each found on its own along the fallback chain, and
// for each the locale the notice's amount, interval and date are
// formatted for in it (the same one unless the files are in different
// languages).
type variant struct {
	subject, text, html          *tmpl
	subjectFmt, textFmt, htmlFmt *localeFormat
}

// A candidate is one place a template may be found: a source, a key in
// it, and the locale a template found there is written in.
type candidate struct {
	set    *templateSet
	key    string
	locale language.Tag
}

// candidates lists, best first, where the templates of kind in locale are
// looked for. For each of kind and "default": the
// notice's locale and its CLDR parents (de-AT, then de) unless they are
// the default locale's, templates_dir before the embedded set; then the
// default locale and its parents and the locale-less file, all from
// templates_dir before any from the embedded set. A locale-less template
// is written in the default locale (it is what every notice got before
// templates had locales), so an operator's default.txt.tmpl overrides the
// shipped default.en.txt.tmpl as it overrode the shipped default.txt.tmpl.
// (The embedded locale-less files are English whatever the default.)
func (r *Renderer) candidates(kind string, locale language.Tag) []candidate {
	dchain := parents(r.defaultLocale)
	var chain []language.Tag
	for _, t := range parents(locale) {
		if !slices.Contains(dchain, t) {
			chain = append(chain, t)
		}
	}
	kinds := []string{kind, defaultKind}
	if kind == defaultKind {
		kinds = kinds[:1]
	}
	sources := []*templateSet{&r.dir, &r.embedded}
	var cs []candidate
	for _, k := range kinds {
		for _, l := range chain {
			for _, s := range sources {
				cs = append(cs, candidate{s, k + "." + l.String(), l})
			}
		}
		for _, s := range sources {
			for _, l := range dchain {
				cs = append(cs, candidate{s, k + "." + l.String(), l})
			}
			lessLocale := r.defaultLocale
			if s == &r.embedded {
				lessLocale = embeddedLanguage
			}
			cs = append(cs, candidate{s, k, lessLocale})
		}
	}
	return cs
}

// parents returns t and its CLDR parents up to, not including, the root:
// de-AT, de; en-AU, en-001, en. Root gives none.
func parents(t language.Tag) []language.Tag {
	var ts []language.Tag
	for ; !t.IsRoot(); t = t.Parent() {
		ts = append(ts, t)
	}
	return ts
}

// find returns the first template of the candidates in the map part
// selects, and the locale of the candidate it came from.
func find[T any](cs []candidate, part func(*templateSet) map[string]T) (T, language.Tag) {
	for _, c := range cs {
		if t, ok := part(c.set)[c.key]; ok {
			return t, c.locale
		}
	}
	var zero T
	return zero, language.Und
}

// maxCachedVariants bounds the variants a Renderer keeps: kinds come from
// the policy and locales from the pass, so a real run uses a handful; past
// the bound (a fuzzer, a source of junk tags) a variant is resolved for
// the one notice and not kept.
const maxCachedVariants = 4096

// variantFor returns the templates and formats of kind in locale (a
// notice's Locale, as given), resolved once and cached. A malformed or
// unknown locale is the default's.
func (r *Renderer) variantFor(kind, locale string) *variant {
	k := variantKey{kind, locale}
	if v, ok := r.variants.Load(k); ok {
		return v.(*variant)
	}
	tag, ok := parseLocale(locale)
	if !ok {
		tag = r.defaultLocale
	}
	cs := r.candidates(kind, tag)
	v := &variant{}
	var in language.Tag
	v.subject, in = find(cs, func(s *templateSet) map[string]*tmpl { return s.subject })
	v.subjectFmt = r.formatFor(formatLocale(tag, in))
	v.text, in = find(cs, func(s *templateSet) map[string]*tmpl { return s.text })
	v.textFmt = r.formatFor(formatLocale(tag, in))
	v.html, in = find(cs, func(s *templateSet) map[string]*tmpl { return s.html })
	v.htmlFmt = r.formatFor(formatLocale(tag, in))
	if r.nvariants.Add(1) <= maxCachedVariants {
		r.variants.Store(k, v)
	}
	return v
}

type variantKey struct{ kind, locale string }

// formatLocale is the locale a notice's amount and dates are formatted
// for in a template: the notice's own locale (the default locale for a
// notice without a usable one) when the template is in that language
// (a de-AT notice with the de template is formatted for de-AT: "€ 12,99",
// "4. Jänner 2026"), else the template's language, so that a date
// never reads "4 mars 2026" in an English sentence.
func formatLocale(notice, body language.Tag) language.Tag {
	nb, _ := notice.Base()
	bb, _ := body.Base()
	if nb == bb {
		return notice
	}
	return body
}

// formatFor returns the formats of locale, built once per locale.
func (r *Renderer) formatFor(locale language.Tag) *localeFormat {
	if f, ok := r.formats.Load(locale); ok {
		return f.(*localeFormat)
	}
	f, _ := r.formats.LoadOrStore(locale, newLocaleFormat(locale, r.defaultFormat.dates))
	return f.(*localeFormat)
}
