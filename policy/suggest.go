package policy

import (
	"strconv"
	"strings"
)

// This file finds the name a misspelt one was probably meant to be, for the
// "did you mean" of the errors of the loaders, Preset and FromEnviron.

// closest returns the name of names that got was most likely meant to be,
// or "" when none is close enough to be a likely typo. A name that differs
// from got only in case and in its separators ('-', '_', ' ') always
// matches: "AzureBackground" is "azure-background", "MaxAttempts" is
// "maxAttempts". Otherwise the nearest name in edit distance (case
// ignored) matches when it is at most a quarter of the shorter name away,
// or 1: "maxAttempt" is "maxAttempts", "Standard2" is "standard", but
// "x" is not "max", nor "bucket" "budget". A wrong guess misleads more than
// none, hence the narrow margin. A tie goes to the name listed first.
func closest(got string, names []string) string {
	key := squash(got)
	for _, n := range names {
		if key != "" && squash(n) == key {
			return n
		}
	}
	best, bestDist := "", -1
	lower := strings.ToLower(got)
	for _, n := range names {
		d := distance(lower, strings.ToLower(n))
		if d <= max(1, min(len(got), len(n))/4) && (bestDist < 0 || d < bestDist) {
			best, bestDist = n, d
		}
	}
	return best
}

// squash returns s in lower case without the separators that names
// written in another convention add or drop: "Azure-Background",
// "azure_background" and "AzureBackground" all squash to "azurebackground".
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', ' ':
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// distance returns the optimal string alignment distance between a and b,
// bytewise: the fewest insertions, deletions, substitutions and swaps of
// adjacent bytes that turn a into b, no byte edited twice (Damerau's
// distance, restricted). Inputs are names, so they are short; a name over
// 64 bytes is not compared (distance returns a large number), which keeps a
// hostile document from costing quadratic time per unknown member.
func distance(a, b string) int {
	const limit = 64
	if len(a) > limit || len(b) > limit {
		return 1 << 20
	}
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// didYouMean returns `did you mean "name"?`.
func didYouMean(name string) string { return "did you mean " + strconv.Quote(name) + "?" }
