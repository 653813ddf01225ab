package command

import (
	"fmt"
	"strings"
)

// Closest returns the names among candidates that are a likely typo of typed: within an
// edit distance of a third of typed's length (at least one), closest first. A person who
// types `wallet infoo` or `bakcup` gets the name they meant; a word that is nothing like any
// name gets nothing rather than a wild guess.
func Closest(typed string, candidates []string) []string {
	limit := max(1, len([]rune(typed))/3)
	var best []string
	bestDist := limit + 1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(typed), strings.ToLower(c))
		switch {
		case d < bestDist:
			best, bestDist = []string{c}, d
		case d == bestDist:
			best = append(best, c)
		}
	}
	return best
}

// DidYouMean is the line that follows an unknown name: the close names if there are any,
// and in any case every valid one, so the person never has to look them up.
func DidYouMean(noun, typed string, valid []string) string {
	quoted := make([]string, len(valid))
	for i, v := range valid {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	list := "there are none yet"
	if len(valid) > 0 {
		list = "the " + noun + "s are " + strings.Join(quoted, ", ")
	}
	if near := Closest(typed, valid); len(near) > 0 {
		return fmt.Sprintf("did you mean %q? (%s)", near[0], list)
	}
	return list
}

// editDistance is the Levenshtein distance between a and b, counted in runes, with a swap of
// two neighbours counting as one edit (the commonest typo).
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
