package retrytransport_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestReadmeGuaranteesNameRealTests: every test that docs/guarantees.md
// gives as proof of a promise exists in the root package, so that the
// promises and their proofs cannot drift apart unnoticed.
func TestReadmeGuaranteesNameRealTests(t *testing.T) {
	page, err := os.ReadFile("docs/guarantees.md")
	if err != nil {
		t.Fatalf("reading docs/guarantees.md: %v", err)
	}
	named := regexp.MustCompile("`((?:Test|Fuzz|Benchmark|Example)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(page), -1)
	if len(named) == 0 {
		t.Fatalf("docs/guarantees.md names no test")
	}
	defined := map[string]bool{}
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatalf("parsing %s: %v", f, err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				defined[fn.Name.Name] = true
			}
		}
	}
	for _, m := range named {
		if !defined[m[1]] {
			t.Errorf("docs/guarantees.md cites %s, which no test file of the root package defines", m[1])
		}
	}
}

// TestCitesOnlyFilesInTheRepository: the README, the docs and the code
// cite only what a user of the repository has: no design notes or source
// documents kept elsewhere, and every docs/ page they name exists.
func TestCitesOnlyFilesInTheRepository(t *testing.T) {
	foreign := regexp.MustCompile(`SPEC §|SPEC\.md|STYLE\.md|DESIGN\.md|seeds?/|seed 00\d|\.\./shared`)
	docPage := regexp.MustCompile(`docs/[a-z0-9-]+\.md`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md") || d.Name() == "Makefile") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if path == "readme_test.go" {
				break // this test names what it looks for
			}
			if m := foreign.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, which users of the repository do not have; put the fact in docs/", path, i+1, m)
			}
			for _, page := range docPage.FindAllString(line, -1) {
				if _, err := os.Stat(page); err != nil {
					t.Errorf("%s:%d names %s, which does not exist", path, i+1, page)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking the repository: %v", err)
	}
}

// readmeMaxLines is the README's length limit: it is for a newcomer, and
// everything else belongs in docs/.
const readmeMaxLines = 300

// TestReadmeIsShort: the README stays within readmeMaxLines lines.
func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("reading README.md: %v", err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; want at most %d: move the detail to a page of docs/", n, readmeMaxLines)
	}
}

// TestReadmeFirstSnippetIsAProgram: the README's first Go snippet is a
// whole program, imports included, so that it can be copied as it stands.
// TestMarkdownSnippetsCompile compiles it.
func TestReadmeFirstSnippetIsAProgram(t *testing.T) {
	for _, s := range readSnippets(t) {
		if s.file != "README.md" {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), "", s.src, parser.ImportsOnly)
		if s.kind() != wholeFile || err != nil || f.Name.Name != "main" || len(f.Imports) == 0 {
			t.Errorf("%v: the README's first ```go snippet is not a package main with its imports", s)
		}
		return
	}
	t.Errorf("README.md has no ```go snippet")
}

// markdownFiles are the Markdown files whose links are checked: the
// README, the docs and the examples' READMEs.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.md", "docs/*.md", "examples/*/README.md"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatalf("filepath.Glob(%s): %v", pattern, err)
		}
		files = append(files, m...)
	}
	return files
}

var (
	// markdownLink matches an inline link or image, [text](target) or
	// ![alt](target), capturing the target.
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// fencedBlock matches a fenced code block, whose text is not Markdown.
	fencedBlock = regexp.MustCompile("(?ms)^ *```.*?^ *```")
	// codeSpan matches an inline code span.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
)

// headingAnchors returns the anchors GitHub gives the headings of the
// Markdown text md: lower case, punctuation dropped, spaces made hyphens,
// and -1, -2, ... after a repeated one.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(fencedBlock.ReplaceAllString(md, ""), "\n") {
		trimmed := strings.TrimLeft(line, "#")
		if trimmed == line || !strings.HasPrefix(trimmed, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(trimmed)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// TestMarkdownLinksResolve: every relative link of the README, the docs and
// the examples' READMEs names a file or directory of the repository, and a
// #fragment names a heading of the Markdown file it points into.
func TestMarkdownLinksResolve(t *testing.T) {
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) (map[string]bool, error) {
		if a, ok := anchorsOf[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchorsOf[path] = headingAnchors(string(b))
		return anchorsOf[path], nil
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		text := fencedBlock.ReplaceAllStringFunc(string(b), func(block string) string {
			return strings.Repeat("\n", strings.Count(block, "\n")) // keep line numbers
		})
		for i, line := range strings.Split(text, "\n") {
			for _, m := range markdownLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, fragment, _ := strings.Cut(target, "#")
				if path == "" {
					path = file
				} else {
					path = filepath.Join(filepath.Dir(file), path)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d links to %s, which does not exist", file, i+1, target)
					continue
				}
				if fragment == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s:%d links to %s: a #fragment into a file that is not Markdown", file, i+1, target)
					continue
				}
				a, err := anchors(path)
				if err != nil {
					t.Fatalf("reading %s: %v", path, err)
				}
				if !a[fragment] {
					t.Errorf("%s:%d links to %s, but %s has no heading #%s", file, i+1, target, path, fragment)
				}
			}
		}
	}
	if checked == 0 {
		t.Errorf("no relative link found in %v", markdownFiles(t))
	}
}
