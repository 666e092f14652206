package retrytransport_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
