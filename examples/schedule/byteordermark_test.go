package main

import (
	"strings"
	"testing"
)

// An SNS delivery policy saved with a UTF-8 byte order mark is still
// recognised as one, as policy.LoadSNS reads it.
func TestRunSNSDocumentWithByteOrderMark(t *testing.T) {
	path := writeFile(t, "delivery.json", "\xEF\xBB\xBF"+snsExample)
	out := runOK(t, "-file", path, "-max", "3")
	if !strings.Contains(out, "(SNS delivery policy): 51 attempts at most") {
		t.Errorf("run(-file %s, with a byte order mark) did not read an SNS policy with 51 attempts:\n%s", path, out)
	}
}
