package quota

import (
	"cmp"
)

// orDefault returns v, or def when v is zero or negative.
func orDefault(v, def int) int { return cmp.Or(max(v, 0), def) }
