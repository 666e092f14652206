package main

// interleave runs every contender of cs rounds times, round by round: in
// each round every contender once, in the order of cs, so that drift of
// this shared machine hits all alike. It returns each contender's runs in
// run order: runs[i][k] is what once returned for cs[i] in round k (from
// 0).
func interleave[C, R any](rounds int, cs []C, once func(round int, c C) R) [][]R {
	runs, _ := interleaveErr(rounds, cs, func(round int, c C) (R, error) { return once(round, c), nil })
	return runs
}

// interleaveErr is interleave for runs that can fail: it stops at the
// first error once returns, and returns it.
func interleaveErr[C, R any](rounds int, cs []C, once func(round int, c C) (R, error)) ([][]R, error) {
	runs := make([][]R, len(cs))
	for round := range rounds {
		for i, c := range cs {
			r, err := once(round, c)
			if err != nil {
				return nil, err
			}
			runs[i] = append(runs[i], r)
		}
	}
	return runs, nil
}
