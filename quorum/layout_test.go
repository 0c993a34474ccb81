package quorum

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"strings"
	"testing"
)

// nodeFiles are the go-redis node's files (docs/layout.md): the node
// package's once it moves out of quorum.
var nodeFiles = strings.Fields(`driverlog.go effectlua.go effectnode.go fanpipe.go fencenode.go
	keyspacenode.go killnode.go latchnode.go nodeconn.go pipeline.go pipescript.go probe.go
	redisnode.go rwlocknode.go`)

// The engine's files type-check without the go-redis node's: the engine
// reaches the node only through Node (and Node.Batch), so the node can
// move to a package of its own.
func TestEngineBuildsWithoutTheGoRedisNode(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package's imports from source")
	}
	skip := map[string]bool{"broken_on.go": true} // the brokenbuild tag's
	for _, f := range nodeFiles {
		skip[f] = true
	}
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || skip[n] {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			if strings.Contains(im.Path.Value, "go-redis") {
				t.Errorf("%s imports %s", n, im.Path.Value)
			}
		}
		files = append(files, f)
	}
	var errs []string
	conf := types.Config{
		Importer: importer.ForCompiler(fset, "source", nil),
		Error:    func(err error) { errs = append(errs, err.Error()) },
	}
	conf.Check("quorum", fset, files, nil)
	for _, e := range errs {
		t.Errorf("without the node's files: %s", e)
	}
}
