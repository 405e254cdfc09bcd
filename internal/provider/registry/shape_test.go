package registry_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module's directory, from this package's.
const root = "../../.."

// Each provider's wire vocabulary (its field names, its correlation and
// signature headers, its event type fields) is written, in string literals or struct tags, in the
// non-test code of exactly one package under internal/: the provider's
// own. Test helpers (packages named *test, such as the stand-ins of
// twiliotest) are test code. Comments do not count.
func TestVocabularyLivesInOneProvider(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"sg_message_id":       "internal/provider/sendgrid",
		"event-data":          "internal/provider/mailgun",
		"RecordType":          "internal/provider/postmark",
		"SigningCertURL":      "internal/provider/ses",
		"SignatureVersion":    "internal/provider/ses",
		"eventType":           "internal/provider/ses",
		"notificationType":    "internal/provider/ses",
		"bounceType":          "internal/provider/ses",
		"X-SES-MESSAGE-TAGS":  "internal/provider/ses",
		"X-SMTPAPI":           "internal/provider/sendgrid",
		"X-Mailgun-Variables": "internal/provider/mailgun",
		"X-PM-Metadata-":      "internal/provider/postmark",
		"MessageStatus":       "internal/provider/twilio",
		"X-Twilio-Signature":  "internal/provider/twilio",
	}
	found := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasSuffix(d.Name(), "test")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			for w := range want {
				if strings.Contains(s, w) && !slices.Contains(found[w], pkg) {
					found[w] = append(found[w], pkg)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for w, pkg := range want {
		if got := found[w]; len(got) != 1 || got[0] != pkg {
			t.Errorf("%q is written in %v, want only %s", w, got, pkg)
		}
	}
}

// No provider package depends on the pass (internal/scan), nor on the
// command: a provider is below everything that runs a pass or serves.
func TestProvidersDoNotImportThePass(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "scan/internal/provider/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "scan/internal/provider/sendgrid") {
		t.Fatalf("go list -deps lists no provider package: %v", deps)
	}
	for _, d := range deps {
		if d == "scan/internal/scan" || strings.HasPrefix(d, "scan/internal/scan/") || d == "scan/cmd/scan" {
			t.Errorf("a provider package depends on %s", d)
		}
	}
}
