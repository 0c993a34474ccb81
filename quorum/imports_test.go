package quorum

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// quorum imports no Redis client, nor redcon, and neither do this module's
// packages it imports: the go-redis node is quorum/redisnode, which
// imports quorum. go/build reads each package's imports from its files.
func TestQuorumImportsNoRedisClient(t *testing.T) {
	const module = "github.com/redlock-proxy/redlock-proxy/"
	seen := map[string]bool{}
	var walk func(dir, pkg string)
	walk = func(dir, pkg string) {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, im := range p.Imports {
			if strings.Contains(im, "redis") || strings.Contains(im, "redcon") {
				t.Errorf("%s imports %s", pkg, im)
			}
			if rel, ok := strings.CutPrefix(im, module); ok && !seen[im] {
				seen[im] = true
				walk(filepath.Join("..", filepath.FromSlash(rel)), im)
			}
		}
	}
	walk(".", "quorum")
}
