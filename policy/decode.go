package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file holds the JSON walker that Load, LoadMap and LoadSNS share. It
// reads a document one object at a time, so that every error can name the
// path of the field at fault, reject unknown and repeated fields, and go on
// to report the other mistakes of the same document.

// FieldError reports a setting that [Load], [LoadMap], [LoadSNS], [Preset],
// [FromEnv] or [FromEnviron] cannot accept. Those functions return it as a pointer, often
// several joined with errors.Join; find one with errors.As.
type FieldError struct {
	// Field says where: a JSON path such as "backoff.base",
	// `hosts["api.example.com"].maxAttempts` or
	// "healthyRetryPolicy.numRetries", "preset", or the name of an
	// environment variable.
	Field string

	// Value is the value found, as written: `"5x"`, `-3`, `"fast"`. It is
	// empty when the field itself is at fault (unknown, repeated or
	// missing); Want then says why, and what is allowed or what the field
	// was probably meant to be.
	Value string

	// Want describes what is allowed, such as "0..100" or "one of
	// fullJitter, equalJitter, ...".
	Want string

	// Suggestion is the known name closest to the one at fault, when one
	// is close enough to be a likely typo: to Value, for a value that must
	// be one of a few names (a preset, a strategy type, a mode), or to
	// Field's last name, for an unknown field or variable. For a member
	// of an earlier schema that moved into the object of its feature
	// ("endpoints"), it is the member it moved to ("failover"), and Want
	// says how to write it there; for one set to its default (false, or
	// null), Want says to remove it instead, and Suggestion is empty. It
	// is empty otherwise.
	Suggestion string
}

// Error returns "policy: <Field> = <Value>; want <Want>", or
// "policy: <Field> = <Value>; did you mean "<Suggestion>"?" when there is a
// Suggestion, or "policy: <Field>: <Want>" when Value is empty.
func (e *FieldError) Error() string {
	switch {
	case e.Value == "":
		return "policy: " + e.Field + ": " + e.Want
	case e.Suggestion != "":
		return "policy: " + e.Field + " = " + e.Value + "; " + didYouMean(e.Suggestion)
	}
	return "policy: " + e.Field + " = " + e.Value + "; want " + e.Want
}

// unknownName returns the FieldError of field, whose last name, name, is
// none of names: "unknown <what>", and the closest name or the list.
func unknownName(field, name, what string, names []string) *FieldError {
	if s := closest(name, names); s != "" {
		return &FieldError{Field: field, Want: "unknown " + what + "; " + didYouMean(s), Suggestion: s}
	}
	return &FieldError{Field: field, Want: "unknown " + what + "; want one of " + strings.Join(names, ", ")}
}

// SyntaxError reports a document that is not well-formed JSON, or that
// has more than one JSON value, and where: [Load], [LoadMap] and
// [LoadSNS] return it as a pointer, and [LoadFile] and [LoadMapFile] with
// the file's name. Find it with errors.As; it wraps encoding/json's
// *json.SyntaxError when there is one.
type SyntaxError struct {
	File   string // the name given to LoadFile or LoadMapFile; empty for a reader
	Line   int    // the line of the offending byte, or of the end of a truncated document; the first is 1
	Column int    // its column, counted in bytes, after a UTF-8 byte order mark on line 1; the first is 1
	Err    error  // what is wrong, without position
}

// Error returns "policy: line <Line>, column <Column>: <Err>", or, with a
// File, "policy: <File>:<Line>:<Column>: <Err>", as compilers write
// positions.
func (e *SyntaxError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("policy: %s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
	}
	return fmt.Sprintf("policy: line %d, column %d: %v", e.Line, e.Column, e.Err)
}

// Unwrap returns Err.
func (e *SyntaxError) Unwrap() error { return e.Err }

// syntaxError returns the SyntaxError of err at byte offset off of data:
// off is the index of the offending byte, len(data) for a truncated
// document.
func syntaxError(data []byte, off int, err error) *SyntaxError {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return &SyntaxError{Line: line, Column: col, Err: err}
}

// wantDuration is what every duration field of the JSON schemas accepts.
const wantDuration = `a duration string >= 0, such as "1.5s"`

// wantHeader is what a header-name field accepts.
const wantHeader = `a header name, such as "X-Attempt"`

// decoder collects the errors of one document.
type decoder struct{ errs []error }

// fail records a FieldError.
func (d *decoder) fail(path, value, want string) {
	d.errs = append(d.errs, &FieldError{Field: path, Value: value, Want: want})
}

// err returns the errors found so far, joined, or nil.
func (d *decoder) err() error { return errors.Join(d.errs...) }

// readDocument reads r to its end and returns the one JSON value it holds:
// anything but white space after it is an error. A document that is not
// well-formed is a *SyntaxError with the position of the offending byte.
// A leading UTF-8 byte order mark is skipped (see parseDocument).
func readDocument(r io.Reader) (json.RawMessage, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("policy: reading the document: %w", err)
	}
	return parseDocument(data)
}

// utf8BOM is the UTF-8 byte order mark that some editors, and Windows
// tools, write at the start of a file.
const utf8BOM = "\xEF\xBB\xBF"

// parseDocument is readDocument for a document already read. It skips one
// leading UTF-8 byte order mark, as most JSON tools do, which encoding/json
// would report as an invalid character the user cannot see; positions are
// counted after it, as an editor shows them. A UTF-16 byte order mark is
// a *SyntaxError that says so.
func parseDocument(data []byte) (json.RawMessage, error) {
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	if bytes.HasPrefix(data, []byte("\xFE\xFF")) || bytes.HasPrefix(data, []byte("\xFF\xFE")) {
		return nil, syntaxError(data, 0, errors.New("the document is UTF-16 (it starts with a UTF-16 byte order mark); want UTF-8"))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.Is(err, io.EOF):
			return nil, errors.New("policy: empty document; want a JSON object")
		case errors.As(err, &se):
			// Offset counts the bytes read, the offending one included.
			return nil, syntaxError(data, int(se.Offset)-1, fmt.Errorf("invalid JSON: %w", err))
		}
		// io.ErrUnexpectedEOF: the document stops inside a value.
		return nil, syntaxError(data, len(data), fmt.Errorf("invalid JSON: %w", err))
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		return nil, syntaxError(data, len(data)-len(rest), errors.New("unexpected data after the JSON document"))
	}
	return raw, nil
}

// member is one field of a JSON object, as written.
type member struct {
	name string
	raw  json.RawMessage
}

// field is a field that an object accepts, and what to do with its value.
type field struct {
	name string
	set  func(v value)
}

// members splits raw, the JSON value at path, into the members of an
// object, in order. It reports a value that is not an object (want
// describes what is) and a repeated name, and returns ok false for the
// former.
func (d *decoder) members(path string, raw json.RawMessage, want string) (ms []member, ok bool) {
	return d.membersAt(path, raw, want, func(name string) string { return join(path, name) })
}

// membersAt is members with at giving the path of each member.
func (d *decoder) membersAt(path string, raw json.RawMessage, want string, at func(string) string) (ms []member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		d.fail(orDocument(path), show(raw), want)
		return nil, false
	}
	seen := make(map[string]bool)
	for dec.More() {
		t, err := dec.Token()
		name, isName := t.(string)
		var v json.RawMessage
		if err != nil || !isName || dec.Decode(&v) != nil {
			// raw was checked by encoding/json before it got here.
			d.fail(orDocument(path), show(raw), "well-formed JSON")
			return nil, false
		}
		if seen[name] {
			d.fail(at(name), "", "repeated field; want it once")
			continue
		}
		seen[name] = true
		ms = append(ms, member{name, v})
	}
	return ms, true
}

// apply passes each member of ms, the object at path, to the field of its
// name, and reports the members that no field accepts. A null value is the
// same as a missing member.
func (d *decoder) apply(path string, ms []member, fields []field) {
	d.applyMoved(path, ms, fields, nil)
}

// applyMoved is apply for an object some of whose members moved: a member
// named in moved is reported with where it went, whatever its value.
func (d *decoder) applyMoved(path string, ms []member, fields []field, moved []movedMember) {
	for _, m := range ms {
		i := 0
		for i < len(fields) && fields[i].name != m.name {
			i++
		}
		mv := slices.IndexFunc(moved, func(mv movedMember) bool { return mv.name == m.name })
		switch {
		case i == len(fields) && mv >= 0:
			d.errs = append(d.errs, moved[mv].fieldError(join(path, m.name), m.raw))
		case i == len(fields):
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.name
			}
			d.errs = append(d.errs, unknownName(join(path, m.name), m.name, "field", names))
		case !isNull(m.raw):
			fields[i].set(value{d, join(path, m.name), m.raw})
		}
	}
}

// object decodes the JSON object raw at path with fields.
func (d *decoder) object(path string, raw json.RawMessage, want string, fields ...field) {
	if ms, ok := d.members(path, raw, want); ok {
		d.apply(path, ms, fields)
	}
}

// value is the JSON value of one field.
type value struct {
	d    *decoder
	path string
	raw  json.RawMessage
}

// fail reports v as not what want describes.
func (v value) fail(want string) { v.d.fail(v.path, show(v.raw), want) }

// failName reports v, the string got, as none of names, which want
// describes, with the name it was most likely meant to be.
func (v value) failName(got string, names []string, want string) {
	v.d.errs = append(v.d.errs, &FieldError{Field: v.path, Value: show(v.raw), Want: want, Suggestion: closest(got, names)})
}

// integer returns v as an integer in [lo, hi], or reports it and returns
// ok false.
func (v value) integer(lo, hi int64, want string) (n int64, ok bool) {
	if json.Unmarshal(v.raw, &n) != nil || n < lo || n > hi {
		v.fail(want)
		return 0, false
	}
	return n, true
}

// int returns v as an integer in [lo, hi], or reports it and returns 0.
func (v value) int(lo, hi int64, want string) int64 {
	n, _ := v.integer(lo, hi, want)
	return n
}

// count returns v as an int >= 0, or reports it and returns 0.
func (v value) count(want string) int { return int(v.int(0, math.MaxInt, want)) }

// float returns v as a number for which ok holds, or reports it and
// returns 0.
func (v value) float(ok func(float64) bool, want string) float64 {
	var f float64
	if json.Unmarshal(v.raw, &f) != nil || !ok(f) {
		v.fail(want)
		return 0
	}
	return f
}

// bool returns v as a boolean, or reports it and returns false.
func (v value) bool() bool {
	var b bool
	if json.Unmarshal(v.raw, &b) != nil {
		v.fail("true or false")
	}
	return b
}

// string returns v as a string, or reports it (want says what it should
// be) and returns ok false.
func (v value) string(want string) (string, bool) {
	var s string
	if json.Unmarshal(v.raw, &s) != nil {
		v.fail(want)
		return "", false
	}
	return s, true
}

// headerName returns v as a header name, or reports it and returns "".
func (v value) headerName() string {
	s, ok := v.string(wantHeader)
	if !ok {
		return ""
	}
	if !validHeaderName(s) {
		v.fail(wantHeader)
		return ""
	}
	return s
}

// duration returns v as a Go duration string >= 0, or reports it and
// returns 0.
func (v value) duration() time.Duration {
	s, ok := v.string(wantDuration)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		v.fail(wantDuration)
		return 0
	}
	return d
}

// elements returns the elements of v, a JSON array, with their paths, or
// reports it and returns nil.
func (v value) elements(want string) []value {
	var raws []json.RawMessage
	if json.Unmarshal(v.raw, &raws) != nil {
		v.fail(want)
		return nil
	}
	vs := make([]value, len(raws))
	for i, r := range raws {
		vs[i] = value{v.d, v.path + "[" + strconv.Itoa(i) + "]", r}
	}
	return vs
}

// nonNegative, unit, below1 and finite are the ranges of the float fields.
func nonNegative(f float64) bool { return f >= 0 }
func unit(f float64) bool        { return f >= 0 && f <= 1 }
func below1(f float64) bool      { return f >= 0 && f < 1 }
func finite(f float64) bool      { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// isNull reports whether raw is the JSON null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// join returns the path of the field name inside the object at path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// orDocument names the top-level value, whose path is empty, in errors.
func orDocument(path string) string {
	if path == "" {
		return "document"
	}
	return path
}

// show returns raw, compacted, for an error message; a long value is cut
// short.
func show(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		b.Reset()
		b.Write(bytes.TrimSpace(raw))
	}
	const limit = 64
	if b.Len() > limit {
		return strings.ToValidUTF8(string(b.Bytes()[:limit]), "") + "..."
	}
	return b.String()
}
