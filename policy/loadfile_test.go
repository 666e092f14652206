package policy_test

// The file loaders: LoadFile and LoadMapFile return what Load and LoadMap
// return, with the file's name in every error.

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/policy"
)

// writeFile writes data to a new file named base and returns its name.
func writeFile(t *testing.T, base, data string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), base)
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestLoadFileIsLoad(t *testing.T) {
	doc := `{"preset": "standard", "maxAttempts": 5, "backoff": {"type": "constant", "interval": "1s"}}`
	got, err := policy.LoadFile(writeFile(t, "retry.json", doc))
	if err != nil {
		t.Fatalf("LoadFile(%s) error = %v; want nil", doc, err)
	}
	want, _ := load(doc)
	if diff := cmp.Diff(want, got, policyOpts); diff != "" {
		t.Errorf("LoadFile(%s) mismatch with Load (-want +got):\n%s", doc, diff)
	}
}

func TestLoadFileErrorsNameTheFile(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // the message, after "policy: " and the file's name
	}{
		{"Syntax", "{\n  \"maxAttempts\": }", `:2:18: invalid JSON: invalid character '}' looking for beginning of value`},
		{"Truncated", `{"maxAttempts": 3`, `:1:18: invalid JSON: unexpected EOF`},
		{"Trailing", "{}\n{}", `:2:1: unexpected data after the JSON document`},
		{"Empty", "", `: empty document; want a JSON object`},
		{"Field", `{"backoff": {"type": "fullJitter", "bas": "1s"}}`, `: backoff.bas: unknown field; did you mean "base"?`},
		{"Every", `{"maxAttempts": -1, "preset": "AzureBackground"}`,
			`: preset = "AzureBackground"; did you mean "azure-background"?` + "\npolicy: NAME: maxAttempts = -1; want an integer >= 1, or 0 for the default"},
		{"Validate", `{"attemptTimeout": "3s", "maxTotalTime": "2s"}`, `: AttemptTimeout = 3s is longer than MaxTotalTime = 2s; want AttemptTimeout <= MaxTotalTime`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := writeFile(t, "retry.json", tt.doc)
			_, err := policy.LoadFile(name)
			want := "policy: " + name + strings.ReplaceAll(tt.want, "NAME", name)
			if err == nil || err.Error() != want {
				t.Errorf("LoadFile(%q) error = %v; want %s", tt.doc, err, want)
			}
		})
	}
}

func TestLoadFileSyntaxErrorHasPosition(t *testing.T) {
	name := writeFile(t, "retry.json", "{\n\n  \"maxAttempts\": 3,\n}")
	_, err := policy.LoadFile(name)
	var se *policy.SyntaxError
	if !errors.As(err, &se) || se.File != name || se.Line != 4 || se.Column != 1 {
		t.Errorf("LoadFile(trailing comma) error = %#v; want a *policy.SyntaxError in %s at 4:1", err, name)
	}
	var je *json.SyntaxError
	if !errors.As(err, &je) {
		t.Errorf("LoadFile(trailing comma) error = %v; want it to wrap a *json.SyntaxError", err)
	}
}

func TestLoadFileFieldErrorsStillMatch(t *testing.T) {
	_, err := policy.LoadFile(writeFile(t, "retry.json", `{"maxAttempt": 3}`))
	var fe *policy.FieldError
	if !errors.As(err, &fe) || fe.Field != "maxAttempt" || fe.Suggestion != "maxAttempts" {
		t.Errorf("LoadFile(maxAttempt) error = %v; want a *policy.FieldError for maxAttempt suggesting maxAttempts", err)
	}
}

func TestLoadFileMissing(t *testing.T) {
	name := filepath.Join(t.TempDir(), "missing.json")
	_, err := policy.LoadFile(name)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "policy: ") || !strings.Contains(err.Error(), name) {
		t.Errorf("LoadFile(missing) error = %v; want one starting \"policy: \", naming the file, that is fs.ErrNotExist", err)
	}
	if _, err := policy.LoadMapFile(name); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), name) {
		t.Errorf("LoadMapFile(missing) error = %v; want one naming the file that is fs.ErrNotExist", err)
	}
}

func TestLoadMapFile(t *testing.T) {
	name := writeFile(t, "hosts.json", `{"hosts": {"api.example.com": {"maxAttempts": 5}}}`)
	m, err := policy.LoadMapFile(name)
	if err != nil || m.Lookup("api.example.com").MaxAttempts != 5 {
		t.Errorf("LoadMapFile(%s) = %+v, %v; want api.example.com with 5 attempts", name, m, err)
	}
	for doc, want := range map[string]string{
		"{\"hosts\": {\n  \"a.com\": {}\n  \"b.com\": {}}}":                    `:3:3: invalid JSON: invalid character '"' after object key:value pair`,
		`{"hosts": {"api.example.com": {"maxAttempt": 5}}}`:                    `: hosts["api.example.com"].maxAttempt: unknown field; did you mean "maxAttempts"?`,
		`{"hosts": {"a.com": {"attemptTimeout": "3s", "maxTotalTime": "2s"}}}`: `: hosts["a.com"]: AttemptTimeout = 3s is longer than MaxTotalTime = 2s; want AttemptTimeout <= MaxTotalTime`,
	} {
		name := writeFile(t, "hosts.json", doc)
		if _, err := policy.LoadMapFile(name); err == nil || err.Error() != "policy: "+name+want {
			t.Errorf("LoadMapFile(%q) error = %v; want policy: %s%s", doc, err, name, want)
		}
	}
}
