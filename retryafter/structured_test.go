package retryafter_test

import (
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/retryafter"
)

// sfSyntaxTests check the Structured Field syntax (RFC 9651) that the
// RateLimit field is scanned with. Each is an extra parameter on an
// exhausted policy, or a List member before one: a valid one leaves the
// 30s reset, an invalid one makes the whole field malformed.
var sfSyntaxTests = []struct {
	name  string
	param string // appended to `"p";r=0;t=30`
	valid bool
}{
	{"integer", ";x=1", true},
	{"negative_integer", ";x=-1", true},
	{"integer_15_digits", ";x=123456789012345", true},
	{"integer_16_digits", ";x=1234567890123456", false},
	{"decimal", ";x=1.5", true},
	{"negative_decimal", ";x=-1.5", true},
	{"decimal_longest", ";x=123456789012.123", true},
	{"decimal_13_integer_digits", ";x=1234567890123.1", false},
	{"decimal_4_fraction_digits", ";x=1.1234", false},
	{"decimal_no_fraction", ";x=1.", false},
	{"decimal_no_integer", ";x=.5", false},
	{"minus_alone", ";x=-", false},
	{"double_minus", ";x=--1", false},
	{"string_empty", `;x=""`, true},
	{"string_escapes", `;x="a\"b\\c"`, true},
	{"string_bad_escape", `;x="a\qb"`, false},
	{"string_unterminated", `;x="abc`, false},
	{"string_tab", ";x=\"a\tb\"", false},
	{"string_non_ascii", `;x="é"`, false},
	{"token", ";x=tok", true},
	{"token_star", ";x=*tok", true},
	{"token_colon_slash", ";x=a:b/c", true},
	{"token_non_ascii", ";x=é", false},
	{"byte_sequence", ";x=:aGVsbG8=:", true},
	{"byte_sequence_empty", ";x=::", true},
	{"byte_sequence_space", ";x=:a b:", false},
	{"byte_sequence_unterminated", ";x=:abc", false},
	{"boolean_false", ";x=?0", true},
	{"boolean_true", ";x=?1", true},
	{"boolean_bad", ";x=?2", false},
	{"boolean_cut", ";x=?", false},
	{"boolean_implicit", ";x", true},
	{"date", ";x=@1659578233", true},
	{"date_negative", ";x=@-1", true},
	{"date_decimal", ";x=@1.5", false},
	{"date_empty", ";x=@", false},
	{"display_string", `;x=%"caf%c3%a9"`, true},
	{"display_string_empty", `;x=%""`, true},
	{"display_string_uppercase_hex", `;x=%"caf%C3%A9"`, false},
	{"display_string_cut_escape", `;x=%"a%c"`, false},
	{"display_string_unquoted", ";x=%abc", false},
	{"display_string_unterminated", `;x=%"abc`, false},
	{"value_missing", ";x=", false},
	{"value_inner_list", ";x=(1)", false},
	{"key_star", ";*x=1", true},
	{"key_all_characters", ";x_1.-*=1", true},
	{"key_uppercase", ";X=1", false},
	{"key_digit_first", ";1x=1", false},
	{"key_missing", ";=1", false},
	{"space_before_key", "; x=1", true},
	{"space_before_equals", ";x =1", false},
	{"space_after_equals", ";x= 1", false},

	// List members before the policy.
	{"inner_list", `;x=1, (1 "a" tok);a=1`, true},
	{"inner_list_empty", `, ()`, true},
	{"inner_list_spaces", `, ( 1  2 )`, true},
	{"inner_list_item_parameters", `, (1;a=2 "b";c)`, true},
	{"inner_list_comma", `, (1,2)`, false},
	{"inner_list_unterminated", `, (1`, false},
	{"inner_list_no_space", `, (1"a")`, false},
	{"inner_lists_adjacent", `, (1)(2)`, false},
	{"trailing_space", ", tok ", true},
}

func TestStructuredFieldSyntax(t *testing.T) {
	for _, tt := range sfSyntaxTests {
		t.Run(tt.name, func(t *testing.T) {
			v := `"p";r=0;t=30` + tt.param
			want, wantOK := 30*time.Second, true
			if !tt.valid {
				want, wantOK = 0, false
			}
			if got, ok := retryafter.ParseRateLimit([]string{v}, now); got != want || ok != wantOK {
				t.Errorf("parseRateLimit(%q) = %v, %t; want %v, %t", v, got, ok, want, wantOK)
			}
		})
	}
}
