package retrytransport_test

// The Go code blocks of README.md and docs/*.md are checked here: each must
// be gofmt'ed and must compile against this module, so that the
// documentation cannot drift from the API unnoticed.
//
// # Convention
//
// Every fenced block whose info string is "go" is a snippet. A block that is
// not Go (a command line, JSON, program output) is fenced as ```sh, ```json,
// ```text or a bare ```. A block that is Go-like but deliberately does not
// compile (pseudo-code) is fenced as ```text, never as ```go. A fence may be
// indented, in a list item say; its indentation is not part of the code.
// Each snippet is one of three kinds, decided in this order:
//
//   - A whole file: it starts, after any comments, with a package clause.
//     It is compiled as it stands and must gofmt to itself.
//   - Top-level declarations: it parses as the body of a Go file after a
//     package clause (only func, type, var and const declarations; a snippet
//     that needs import declarations must be a whole file). It must gofmt to
//     itself after "package snippet\n\n".
//   - Statements (the usual case): anything else. It is the body of a
//     function, and must gofmt to itself when each of its non-empty lines
//     is indented by one tab between "func _() {" and "}". In the README
//     it is therefore written at column 0, with tabs for its own blocks.
//
// Fragments, the last two kinds, get what they use and do not declare:
//
//   - Imports, for the package names of snippetImports (this module's
//     packages, the OpenTelemetry module's and some of the standard
//     library's) that they use. A snippet that imports a package of another
//     module of the repository (snippetModules) compiles in that module.
//   - Context variables of snippetContext (client, url, file, p, ...), as
//     package-level variables of the named types, for the names they use
//     without declaring them: a snippet shows its point, not its setup.
//   - For statements, a use (_ = x) of every variable declared at the top
//     level of the snippet with := or var, so that a snippet may end on a
//     declaration its reader goes on to use.
//
// Each snippet becomes a package of its own under snippetDir, a directory
// that exists only in a go build -overlay: nothing is written to the
// repository. One go build compiles all of them, offline (GOPROXY=off), and
// //line directives make the compiler's messages name the Markdown file and
// line.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// snippetImports maps the package names a fragment may use without
// importing them to their import paths.
var snippetImports = map[string]string{
	"retrytransport": "github.com/retrytransport/retrytransport",
	"backoff":        "github.com/retrytransport/retrytransport/backoff",
	"breaker":        "github.com/retrytransport/retrytransport/breaker",
	"classify":       "github.com/retrytransport/retrytransport/classify",
	"concurrency":    "github.com/retrytransport/retrytransport/concurrency",
	"policy":         "github.com/retrytransport/retrytransport/policy",
	"quota":          "github.com/retrytransport/retrytransport/quota",
	"ratelimit":      "github.com/retrytransport/retrytransport/ratelimit",
	"retryafter":     "github.com/retrytransport/retrytransport/retryafter",
	"bytes":          "bytes",
	"context":        "context",
	"errors":         "errors",
	"fmt":            "fmt",
	"http":           "net/http",
	"httptest":       "net/http/httptest",
	"io":             "io",
	"json":           "encoding/json",
	"log":            "log",
	"os":             "os",
	"slog":           "log/slog",
	"strings":        "strings",
	"syscall":        "syscall",
	"time":           "time",
	// The OpenTelemetry module's, compiled in that module (snippetModules).
	"otelretry": "github.com/retrytransport/retrytransport/otelretry",
	"otel":      "go.opentelemetry.io/otel",
	"sdkmetric": "go.opentelemetry.io/otel/sdk/metric",
	"sdktrace":  "go.opentelemetry.io/otel/sdk/trace",
	"otelhttp":  "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp",
	// The Redis module's, compiled in that module.
	"redisretry": "github.com/retrytransport/retrytransport/redisretry",
	"redis":      "github.com/redis/go-redis/v9",
	"redis_rate": "github.com/go-redis/redis_rate/v10",
}

// snippetModules maps import path prefixes to the directory of the
// repository's module whose go.mod provides them: a snippet that imports
// one is compiled in that module rather than this one.
var snippetModules = map[string]string{
	"github.com/retrytransport/retrytransport/otelretry":  "otelretry",
	"go.opentelemetry.io/":                                "otelretry",
	"github.com/retrytransport/retrytransport/redisretry": "redisretry",
	"github.com/redis/go-redis/":                          "redisretry",
	"github.com/go-redis/redis_rate/":                     "redisretry",
}

// moduleOf returns the directory, relative to this module's root, of the
// module that compiles src, a snippet's compile form: "." for this one.
func moduleOf(src string) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.ImportsOnly)
	if err != nil {
		return "."
	}
	for _, imp := range f.Imports {
		for prefix, dir := range snippetModules {
			if strings.HasPrefix(strings.Trim(imp.Path.Value, `"`), prefix) {
				return dir
			}
		}
	}
	return "."
}

// snippetContext gives the type of each variable a fragment may use without
// declaring it. No name here is also a package name of snippetImports.
var snippetContext = map[string]string{
	"ctx":    "context.Context",
	"client": "*http.Client",
	"req":    "*http.Request",
	"resp":   "*http.Response",
	"url":    "string",
	"file":   "io.Reader",
	"p":      "policy.Policy",
	// A token source, as golang.org/x/oauth2 has.
	"tokens": "interface{ Token() (string, error) }",
	// The OpenTelemetry SDK's providers.
	"tp": "*sdktrace.TracerProvider",
	"mp": "*sdkmetric.MeterProvider",
}

// snippetDir is the overlay-only directory, relative to the module root,
// that holds one package per snippet while go build checks them.
const snippetDir = "readmesnippetcheck"

// snippetFiles are the Markdown files whose snippets are checked.
func snippetFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatalf("filepath.Glob(docs/*.md): %v", err)
	}
	return append([]string{"README.md"}, docs...)
}

type snippetKind int

const (
	wholeFile snippetKind = iota
	declarations
	statements
)

// A snippet is the code of one ```go fence.
type snippet struct {
	file  string // Markdown file, relative to the module root
	line  int    // line of the opening fence, from 1
	close int    // line of the closing fence
	src   string // the code, without the fence's indentation; ends in "\n" unless empty
}

func (s snippet) String() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

// pkg is the name of the snippet's package directory under snippetDir.
func (s snippet) pkg() string {
	return regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s.file), "_") + fmt.Sprint("_", s.line)
}

// kind tells which of the convention's three kinds s is.
func (s snippet) kind() snippetKind {
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", s.src, parser.PackageClauseOnly); err == nil {
		return wholeFile
	}
	if f, err := parser.ParseFile(fset, "", "package snippet\n"+s.src, parser.SkipObjectResolution); err == nil && len(f.Imports) == 0 {
		return declarations
	}
	return statements
}

// gofmtForm is s as gofmt sees it under the convention: it must format to itself.
func (s snippet) gofmtForm() string {
	switch s.kind() {
	case wholeFile:
		return s.src
	case declarations:
		return "package snippet\n\n" + s.src
	}
	var b strings.Builder
	b.WriteString("package snippet\n\nfunc _() {\n")
	for _, line := range strings.SplitAfter(s.src, "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("\t")
		}
		b.WriteString(line)
	}
	b.WriteString("}\n")
	return b.String()
}

// unwrap undoes gofmtForm on formatted, the gofmt'ed gofmtForm of s.
func (s snippet) unwrap(formatted string) string {
	switch s.kind() {
	case wholeFile:
		return formatted
	case declarations:
		return strings.TrimPrefix(formatted, "package snippet\n\n")
	}
	body, ok1 := strings.CutPrefix(formatted, "package snippet\n\nfunc _() {\n")
	body, ok2 := strings.CutSuffix(body, "}\n")
	if !ok1 || !ok2 {
		return formatted // gofmt changed the wrapper: show all of it
	}
	lines := strings.SplitAfter(body, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimPrefix(line, "\t")
	}
	return strings.Join(lines, "")
}

// compileForm is the Go file that holds s in its package: s with what the
// convention adds, and //line directives that map it back to the Markdown,
// so that a syntax error names the Markdown file and line.
func (s snippet) compileForm() (string, error) {
	at := func(line int) string { return fmt.Sprintf("//line %s:%d:1\n", s.file, line) }
	kind := s.kind()
	if kind == wholeFile {
		return at(s.line+1) + s.src, nil
	}
	code, end := at(s.line+1)+s.src, ""
	if kind == statements {
		code, end = "func _() {\n"+code+at(s.close), "}\n"
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", "package snippet\n"+code+end, 0)
	if err != nil {
		return "", err
	}
	if kind == statements {
		for _, v := range topLevelVars(f.Decls[0].(*ast.FuncDecl).Body) {
			code += "_ = " + v + "\n"
		}
		code += end
	}
	var vars strings.Builder
	for _, name := range unresolved(f) {
		if typ, ok := snippetContext[name]; ok {
			fmt.Fprintf(&vars, "var %s %s\n", name, typ)
		}
	}
	f, err = parser.ParseFile(token.NewFileSet(), "", "package snippet\n"+vars.String()+code, 0)
	if err != nil {
		return "", err
	}
	var imports strings.Builder
	for _, name := range unresolved(f) {
		if path, ok := snippetImports[name]; ok {
			fmt.Fprintf(&imports, "import %s %q\n", name, path)
		}
	}
	return "package snippet\n\n" + imports.String() + vars.String() + code, nil
}

// unresolved lists, sorted, the names f uses without declaring them.
func unresolved(f *ast.File) []string {
	var names []string
	for _, id := range f.Unresolved {
		names = append(names, id.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// topLevelVars lists the variables that body declares outside any block
// of their own, with := or var, in order.
func topLevelVars(body *ast.BlockStmt) []string {
	var names []string
	add := func(id *ast.Ident) {
		if id.Name != "_" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	for _, stmt := range body.List {
		switch stmt := stmt.(type) {
		case *ast.AssignStmt:
			if stmt.Tok == token.DEFINE {
				for _, e := range stmt.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if gd, ok := stmt.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, spec := range gd.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						add(id)
					}
				}
			}
		}
	}
	return names
}

// readSnippets returns the ```go snippets of the Markdown files, in order.
func readSnippets(t *testing.T) []snippet {
	t.Helper()
	var all []snippet
	for _, file := range snippetFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		var (
			open   bool
			indent string
			cur    *snippet
			code   strings.Builder
		)
		for i, line := range strings.Split(string(b), "\n") {
			trimmed := strings.TrimLeft(line, " ")
			if !open {
				if info, ok := strings.CutPrefix(trimmed, "```"); ok {
					open, indent, cur = true, line[:len(line)-len(trimmed)], nil
					if lang, _, _ := strings.Cut(strings.TrimSpace(info), " "); lang == "go" {
						cur = &snippet{file: file, line: i + 1}
						code.Reset()
					}
				}
				continue
			}
			if strings.TrimSpace(line) == "```" {
				open = false
				if cur != nil {
					cur.close, cur.src = i+1, code.String()
					all = append(all, *cur)
				}
				continue
			}
			code.WriteString(strings.TrimPrefix(line, indent) + "\n")
		}
		if open {
			t.Errorf("%s: a ``` fence is never closed", file)
		}
	}
	if len(all) == 0 {
		t.Fatalf("no ```go snippet in %v", snippetFiles(t))
	}
	return all
}

// TestMarkdownSnippetsAreGofmted: every ```go snippet parses and is
// formatted as gofmt would format it, under the convention at the top of
// this file.
func TestMarkdownSnippetsAreGofmted(t *testing.T) {
	for _, s := range readSnippets(t) {
		src, err := s.compileForm()
		if err == nil {
			_, err = parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
		}
		if err != nil {
			t.Errorf("%v: ```go snippet does not parse: %v", s, err)
			continue
		}
		in := s.gofmtForm()
		out, err := format.Source([]byte(in))
		if err != nil {
			t.Errorf("%v: format.Source: %v", s, err)
			continue
		}
		if string(out) != in {
			want := strings.Split(s.unwrap(string(out)), "\n")
			got := strings.Split(s.src, "\n")
			t.Errorf("%v: ```go snippet is not gofmt'ed (-gofmt +%s):\n%s", s, s.file, cmp.Diff(want, got))
		}
	}
}

// TestMarkdownSnippetsCompile: every ```go snippet compiles against this
// module, or the repository module that provides its imports
// (snippetModules), with what the convention at the top of this file adds.
// One go build per module, offline, checks them all.
func TestMarkdownSnippetsCompile(t *testing.T) {
	root, err := os.Getwd()
	if err != nil {
		t.Fatalf("os.Getwd: %v", err)
	}
	tmp := t.TempDir()
	byModule := map[string][]compiled{}
	for _, s := range readSnippets(t) {
		src, err := s.compileForm()
		if err != nil {
			t.Errorf("%v: ```go snippet does not parse: %v", s, err)
			continue
		}
		file := filepath.Join(tmp, s.pkg()+".go")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatalf("writing %s: %v", file, err)
		}
		mod := moduleOf(src)
		byModule[mod] = append(byModule[mod], compiled{s, file})
	}
	for _, mod := range slices.Sorted(maps.Keys(byModule)) {
		buildSnippets(t, filepath.Join(root, mod), tmp, byModule[mod])
	}
}

// compiled is a snippet and the file that holds its compile form.
type compiled struct {
	snippet
	file string
}

// buildSnippets compiles snippets as packages of the module in dir, with
// one go build.
func buildSnippets(t *testing.T, dir, tmp string, snippets []compiled) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, snippetDir)); err == nil {
		t.Fatalf("%s exists on disk; it must exist only in the overlay", filepath.Join(dir, snippetDir))
	}
	overlay := map[string]string{}
	bySnippet := map[string]snippet{}
	var pkgs []string
	for _, c := range snippets {
		overlay[filepath.Join(dir, snippetDir, c.pkg(), "snippet.go")] = c.file
		bySnippet[c.pkg()] = c.snippet
		pkgs = append(pkgs, "./"+snippetDir+"/"+c.pkg())
	}
	o, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatalf("json.Marshal(overlay): %v", err)
	}
	overlayFile := filepath.Join(tmp, "overlay-"+filepath.Base(dir)+".json")
	if err := os.WriteFile(overlayFile, o, 0o644); err != nil {
		t.Fatalf("writing %s: %v", overlayFile, err)
	}

	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command in PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, append([]string{"build", "-overlay", overlayFile}, pkgs...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off", "GOTOOLCHAIN=local")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	if runErr == nil {
		return
	}

	// go build heads each package's errors with "# <import path>".
	errs := map[string]string{}
	var current string
	var other []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if path, ok := strings.CutPrefix(line, "# "); ok {
			current = path[strings.LastIndex(path, "/")+1:]
			continue
		}
		if _, ok := bySnippet[current]; ok {
			errs[current] += "\t" + line + "\n"
		} else {
			other = append(other, line)
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(errs)) {
		t.Errorf("%v: ```go snippet does not compile:\n%s", bySnippet[pkg], errs[pkg])
	}
	if len(other) > 0 || len(errs) == 0 {
		t.Errorf("go build -overlay %s %v in %s: %v\n%s", overlayFile, pkgs, dir, runErr, out.String())
	}
}
