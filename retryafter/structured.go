package retryafter

// This file scans Structured Field Values for HTTP (RFC 9651, which
// obsoletes RFC 8941) just far enough to read the IETF RateLimit field: the
// syntax of Lists and Dictionaries, Items, Inner Lists and Parameters, with
// the numeric value of Integers kept and every other bare item only
// checked and skipped. It works on substrings of the field value and never
// allocates. A syntax error anywhere makes the whole field malformed, as
// RFC 9651 §4.2 requires.

// sfKind is the type of a bare item, as far as the RateLimit field cares.
type sfKind uint8

const (
	sfAbsent  sfKind = iota // no value: a parameter or key that was not given
	sfInteger               // an Integer; its value is in sfValue.n
	sfOther                 // any other bare item (Decimal, String, Token, …)
)

// sfValue is a bare item: its kind and, for an Integer, its value.
type sfValue struct {
	kind sfKind
	n    int64
}

// count returns the value of an Integer that is not negative, and false
// for any other item.
func (v sfValue) count() (int64, bool) {
	return v.n, v.kind == sfInteger && v.n >= 0
}

// sfScanner reads one field line from position i. Its methods report false
// on a syntax error, leaving i somewhere inside the line.
type sfScanner struct {
	s string
	i int
}

// done reports whether the whole line has been read.
func (p *sfScanner) done() bool { return p.i >= len(p.s) }

// peek reports whether the next byte is c.
func (p *sfScanner) peek(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }

// skipSP skips spaces, the only whitespace allowed inside Parameters and
// Inner Lists.
func (p *sfScanner) skipSP() {
	for p.peek(' ') {
		p.i++
	}
}

// skipOWS skips spaces and tabs, the whitespace allowed around the commas
// between members.
func (p *sfScanner) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// next moves past the separator after a member: OWS "," OWS. It reports
// more=false at the end of the line, and ok=false on anything but a comma
// followed by another member.
func (p *sfScanner) next() (more, ok bool) {
	p.skipOWS()
	if p.done() {
		return false, true
	}
	if !p.peek(',') {
		return false, false
	}
	p.i++
	p.skipOWS()
	return true, !p.done() // a trailing comma is an error
}

// key reads a key: ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
func (p *sfScanner) key() (string, bool) {
	start := p.i
	if p.done() || !(isLower(p.s[p.i]) || p.s[p.i] == '*') {
		return "", false
	}
	for p.i++; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		if !isLower(c) && !isDigit(c) && c != '_' && c != '-' && c != '.' && c != '*' {
			break
		}
	}
	return p.s[start:p.i], true
}

// param reads one parameter, from the ";" on: ";" *SP key [ "=" bare-item ].
// A parameter without a value is the Boolean true, an sfOther.
func (p *sfScanner) param() (string, sfValue, bool) {
	p.i++ // the ";"
	p.skipSP()
	k, ok := p.key()
	if !ok {
		return "", sfValue{}, false
	}
	if !p.peek('=') {
		return k, sfValue{kind: sfOther}, true
	}
	p.i++
	v, ok := p.bareItem()
	return k, v, ok
}

// skipParams reads and discards the Parameters that follow an item.
func (p *sfScanner) skipParams() bool {
	for p.peek(';') {
		if _, _, ok := p.param(); !ok {
			return false
		}
	}
	return true
}

// innerList reads an Inner List, from the "(" on, and its Parameters:
// "(" *SP [ sf-item *( 1*SP sf-item ) *SP ] ")" parameters.
func (p *sfScanner) innerList() bool {
	p.i++ // the "("
	p.skipSP()
	for !p.peek(')') {
		if _, ok := p.bareItem(); !ok || !p.skipParams() {
			return false
		}
		if !p.peek(' ') && !p.peek(')') {
			return false
		}
		p.skipSP()
	}
	p.i++ // the ")"
	return p.skipParams()
}

// bareItem reads one bare item. Integers keep their value; every other
// type is checked and returned as sfOther.
func (p *sfScanner) bareItem() (sfValue, bool) {
	if p.done() {
		return sfValue{}, false
	}
	switch c := p.s[p.i]; {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		p.i++
		return sfValue{kind: sfOther}, p.str()
	case c == '*' || isAlpha(c):
		// Token: ( ALPHA / "*" ) *( tchar / ":" / "/" ).
		for p.i++; p.i < len(p.s) && (isTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/'); p.i++ {
		}
		return sfValue{kind: sfOther}, true
	case c == ':':
		// Byte Sequence: ":" *(base64) ":".
		for p.i++; p.i < len(p.s) && p.s[p.i] != ':'; p.i++ {
			if c := p.s[p.i]; !isAlpha(c) && !isDigit(c) && c != '+' && c != '/' && c != '=' {
				return sfValue{}, false
			}
		}
		if p.done() {
			return sfValue{}, false
		}
		p.i++
		return sfValue{kind: sfOther}, true
	case c == '?':
		// Boolean: "?" ( "0" / "1" ).
		if p.i+1 >= len(p.s) || (p.s[p.i+1] != '0' && p.s[p.i+1] != '1') {
			return sfValue{}, false
		}
		p.i += 2
		return sfValue{kind: sfOther}, true
	case c == '@':
		// Date: "@" sf-integer.
		p.i++
		v, ok := p.number()
		return sfValue{kind: sfOther}, ok && v.kind == sfInteger
	case c == '%':
		// Display String: "%" DQUOTE *( unescaped / "\" / pct-encoded ) DQUOTE,
		// with pct-encoded in lowercase hex. The decoded bytes are not
		// checked for UTF-8: the RateLimit field never uses the value.
		p.i++
		if !p.peek('"') {
			return sfValue{}, false
		}
		for p.i++; p.i < len(p.s); p.i++ {
			switch c := p.s[p.i]; {
			case c == '"':
				p.i++
				return sfValue{kind: sfOther}, true
			case c == '%':
				if p.i+2 >= len(p.s) || !isLowerHex(p.s[p.i+1]) || !isLowerHex(p.s[p.i+2]) {
					return sfValue{}, false
				}
				p.i += 2
			case c < 0x20 || c > 0x7e:
				return sfValue{}, false
			}
		}
	}
	return sfValue{}, false
}

// str reads the rest of a String after its opening quote:
// *( unescaped / "\" ( DQUOTE / "\" ) ) DQUOTE, all printable ASCII.
func (p *sfScanner) str() bool {
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			return true
		case c == '\\':
			p.i++
			if p.done() || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return false
			}
		case c < 0x20 || c > 0x7e:
			return false
		}
	}
	return false
}

// number reads an Integer (["-"] 1*15DIGIT) or a Decimal (["-"] 1*12DIGIT
// "." 1*3DIGIT). Longer numbers are syntax errors, as RFC 9651 §4.2.4 says,
// so an Integer always fits in an int64.
func (p *sfScanner) number() (sfValue, bool) {
	neg := p.peek('-')
	if neg {
		p.i++
	}
	start := p.i
	var n int64
	for p.i < len(p.s) && isDigit(p.s[p.i]) {
		n = n*10 + int64(p.s[p.i]-'0')
		p.i++
		if p.i-start > 15 {
			return sfValue{}, false
		}
	}
	digits := p.i - start
	if digits == 0 {
		return sfValue{}, false
	}
	if !p.peek('.') {
		if neg {
			n = -n
		}
		return sfValue{kind: sfInteger, n: n}, true
	}
	if digits > 12 {
		return sfValue{}, false
	}
	p.i++
	start = p.i
	for p.i < len(p.s) && isDigit(p.s[p.i]) {
		p.i++
	}
	if frac := p.i - start; frac < 1 || frac > 3 {
		return sfValue{}, false
	}
	return sfValue{kind: sfOther}, true
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLower(c byte) bool    { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool    { return isLower(c) || 'A' <= c && c <= 'Z' }
func isLowerHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }

// isTchar reports whether c is a tchar of RFC 9110 §5.6.2.
func isTchar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
