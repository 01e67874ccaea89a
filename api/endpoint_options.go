package api

import (
	"slices"

	"github.com/heraldhq/herald/filter"
	"github.com/heraldhq/herald/store"
)

// filterProblem is the 422 of a filter that does not parse: the store's
// sentence, and the character where the filter goes wrong as position, so
// that a form can point at it.
func filterProblem(verr *store.ValidationError, syntax *filter.SyntaxError) *Problem {
	p := invalid(verr.Field, verr.Field+" "+verr.Problem)
	p.Position = syntax.Position
	return p
}

// sortedChannels is channels as herald.messages stores them: distinct, in
// order; empty, not nil, for none.
func sortedChannels(channels []string) []string {
	out := slices.Clone(channels)
	slices.Sort(out)
	return append([]string{}, slices.Compact(out)...)
}
