package unnest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/unnest"
)

type row struct {
	id   int
	name string
}

var columns = []unnest.Column[row]{
	unnest.Col(func(r row) int { return r.id }),
	unnest.Col(func(r row) string { return r.name }),
}

func TestArraysAreColumnsInTheOrderOfRows(t *testing.T) {
	t.Parallel()

	rows := []row{{1, "a"}, {2, "b"}, {3, "c"}}
	require.Equal(t, []any{[]int{1, 2, 3}, []string{"a", "b", "c"}}, unnest.Arrays(rows, columns...))
	require.Equal(t, []any{[]int{}, []string{}}, unnest.Arrays(nil, columns...), "no rows, empty arrays")
}

func TestValuesAreOneRowsColumns(t *testing.T) {
	t.Parallel()

	require.Equal(t, []any{2, "b"}, unnest.Values(row{2, "b"}, columns...))
}
