package quorum

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExplorersRunInCI: every test that skips itself, or part of itself,
// under -race (modelUnderRace) is named by .ci/run's run without -race;
// otherwise CI would never run it whole.
func TestExplorersRunInCI(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var run *regexp.Regexp
	for line := range strings.Lines(string(ci)) {
		if strings.HasPrefix(line, "go test ") && !strings.Contains(line, "-race") && strings.Contains(line, "./quorum") {
			m := regexp.MustCompile(`-run '([^']+)'`).FindStringSubmatch(line)
			if m == nil {
				t.Fatalf(".ci/run's run without -race names no tests: %q", line)
			}
			run = regexp.MustCompile(m[1])
		}
	}
	if run == nil {
		t.Fatal(".ci/run has no go test of ./quorum without -race")
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			uses := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.Name == "modelUnderRace" {
					uses = true
				}
				return !uses
			})
			if !uses {
				continue
			}
			found++
			if !run.MatchString(fn.Name.Name) {
				t.Errorf("%s (%s) skips under -race, and .ci/run's run without -race does not name it", fn.Name.Name, name)
			}
		}
	}
	if found == 0 {
		t.Error("no test skips under -race: is modelUnderRace still the flag?")
	}
}
