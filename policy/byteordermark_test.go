package policy_test

// Every loader reads a document that starts with a UTF-8 byte order mark,
// as editors on Windows save one, the same as without it.

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/policy"
)

// bom is the UTF-8 byte order mark.
const bom = "\xEF\xBB\xBF"

func TestLoadersSkipUTF8ByteOrderMark(t *testing.T) {
	const (
		doc    = `{"maxAttempts": 5, "maxDelay": "2s"}`
		mapDoc = `{"default": {"maxAttempts": 2}, "hosts": {"*.example.com": {"maxAttempts": 4}}}`
		snsDoc = `{"healthyRetryPolicy": {"numRetries": 4, "minDelayTarget": 1, "maxDelayTarget": 8}}`
	)
	tests := []struct {
		name string
		doc  string
		load func(t *testing.T, doc string) (any, error)
	}{
		{"Load", doc, func(_ *testing.T, doc string) (any, error) { return policy.Load(strings.NewReader(doc)) }},
		{"LoadFile", doc, func(t *testing.T, doc string) (any, error) { return policy.LoadFile(writeFile(t, "p.json", doc)) }},
		{"PolicyUnmarshalJSON", doc, func(_ *testing.T, doc string) (any, error) {
			var p policy.Policy
			err := p.UnmarshalJSON([]byte(doc))
			return p, err
		}},
		{"LoadMap", mapDoc, func(_ *testing.T, doc string) (any, error) { return policy.LoadMap(strings.NewReader(doc)) }},
		{"LoadMapFile", mapDoc, func(t *testing.T, doc string) (any, error) { return policy.LoadMapFile(writeFile(t, "m.json", doc)) }},
		{"LoadSNS", snsDoc, func(_ *testing.T, doc string) (any, error) { return policy.LoadSNS(strings.NewReader(doc)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := tt.load(t, tt.doc)
			if err != nil {
				t.Fatalf("%s(%s) error = %v; want nil", tt.name, tt.doc, err)
			}
			got, err := tt.load(t, bom+tt.doc)
			if err != nil {
				t.Fatalf("%s(BOM %s) error = %v; want nil", tt.name, tt.doc, err)
			}
			if diff := cmp.Diff(want, got, ignoreClassify); diff != "" {
				t.Errorf("%s(BOM %s) differs from %[1]s without the BOM (-want +got):\n%s", tt.name, tt.doc, diff)
			}
		})
	}
}

// A syntax error after a byte order mark is at the line and column an
// editor shows, which do not count the mark.
func TestSyntaxErrorAfterByteOrderMarkHasEditorPosition(t *testing.T) {
	_, err := policy.Load(strings.NewReader(bom + `{"maxAttempts": }`))
	var se *policy.SyntaxError
	if !errors.As(err, &se) || se.Line != 1 || se.Column != 17 {
		t.Errorf("Load(BOM {\"maxAttempts\": }) error = %v; want a *SyntaxError at line 1, column 17", err)
	}
}

// A UTF-16 document, which starts with its own byte order mark, is a
// *SyntaxError that says it is UTF-16.
func TestLoadSaysDocumentIsUTF16(t *testing.T) {
	for _, mark := range []string{"\xFE\xFF", "\xFF\xFE"} {
		_, err := policy.Load(strings.NewReader(mark + "{\x00}\x00"))
		var se *policy.SyntaxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "UTF-16") {
			t.Errorf("Load(% x ...) error = %v; want a *SyntaxError saying the document is UTF-16", mark, err)
		}
	}
}
