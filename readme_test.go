package retrytransport_test

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

// TestReadmeGuaranteesNameRealTests: every test the README's Guarantees
// section gives as proof exists, so that the promises and their proofs
// cannot drift apart unnoticed.
func TestReadmeGuaranteesNameRealTests(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("reading README.md: %v", err)
	}
	section, ok := strings.CutPrefix(string(readme[strings.Index(string(readme), "\n## Guarantees\n")+1:]), "## Guarantees\n")
	if !ok {
		t.Fatalf("README.md has no Guarantees section")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	named := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(section, -1)
	if len(named) == 0 {
		t.Fatalf("the Guarantees section names no test")
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
			t.Errorf("README Guarantees cites %s, which no test file of the root package defines", m[1])
		}
	}
}
