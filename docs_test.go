package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"
)

// Every relative link in README.md and docs/*.md names a file that exists
// and, with a #fragment, a heading of that file.
func TestDocLinks(t *testing.T) {
	docs, err := fs.Glob(os.DirFS("."), "docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md")
	}
	broken, n, err := brokenLinks(os.DirFS("."), append([]string{"README.md"}, docs...))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
	if n < 50 {
		t.Errorf("%d relative links checked; want the README's and docs' links found", n)
	}
}

// The checker itself reports a missing file, a missing heading, and a
// missing heading of another file, and accepts GitHub's anchors.
func TestDocLinksChecker(t *testing.T) {
	fsys := fstest.MapFS{
		"README.md": {Data: []byte("# Top\n\n## Run it, test it\n\nSee [a](docs/a.md#what-it-refuses-and-why), " +
			"[b](docs/a.md#nothing), [c](docs/gone.md), [d](#run-it-test-it), [e](#top-1), [f](https://x.org/#y).\n")},
		"docs/a.md": {Data: []byte("# A\n\n### What it refuses, and why\n\n```\n# not a heading\n```\n\n" +
			"[back](../README.md#top) [code](#not-a-heading) `[skipped](#in-code)` [self](#a) [dir](../docs)\n\n## Dup\n\n## Dup\n\n[dup](#dup-1)\n")},
	}
	broken, n, err := brokenLinks(fsys, []string{"README.md", "docs/a.md"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:5: docs/a.md#nothing: no such heading",
		"README.md:5: docs/gone.md: no such file",
		"README.md:5: #top-1: no such heading",
		"docs/a.md:9: #not-a-heading: no such heading",
	}
	if strings.Join(broken, "\n") != strings.Join(want, "\n") || n != 10 {
		t.Errorf("broken (%d links):\n%s\nwant (10 links):\n%s", n, strings.Join(broken, "\n"), strings.Join(want, "\n"))
	}
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	mdHeading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// brokenLinks checks the relative links of files (paths in fsys) and
// returns one line per broken link, and how many relative links it checked.
func brokenLinks(fsys fs.FS, files []string) ([]string, int, error) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(name string) (map[string]bool, error) {
		if a, ok := anchors[name]; ok {
			return a, nil
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		a := map[string]bool{}
		seen := map[string]int{}
		for _, line := range proseLines(string(b)) {
			m := mdHeading.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			s := githubAnchor(m[1])
			if k, dup := seen[s]; dup {
				seen[s] = k + 1
				s = fmt.Sprintf("%s-%d", s, k+1)
			} else {
				seen[s] = 0
			}
			a[s] = true
		}
		anchors[name] = a
		return a, nil
	}
	var broken []string
	n := 0
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, 0, err
		}
		for i, line := range proseLines(string(b)) {
			for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				file, frag, _ := strings.Cut(target, "#")
				name := f
				if file != "" {
					name = path.Clean(path.Join(path.Dir(f), file))
					if _, err := fs.Stat(fsys, name); err != nil {
						broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file", f, i+1, target))
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(name, ".md") {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: a #fragment of a file that is not markdown", f, i+1, target))
					continue
				}
				a, err := anchorsOf(name)
				if err != nil {
					return nil, 0, err
				}
				if !a[frag] {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: no such heading", f, i+1, target))
				}
			}
		}
	}
	return broken, n, nil
}

// proseLines returns the lines of a markdown text with those inside fenced
// code blocks blanked, so that line numbers stay true.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// githubAnchor is the fragment GitHub gives a heading: lower case, spaces
// to '-', punctuation but '-' and '_' dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
