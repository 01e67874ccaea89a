// Package unnest passes a slice of rows to Postgres as one array per
// column, so that one statement reads them all with unnest:
//
//	INSERT INTO t (id, name)
//	SELECT * FROM unnest($1::uuid[], $2::text[])
//
// A caller keeps its rows as a slice of structs and lists their columns
// once, in the statement's order:
//
//	var columns = []unnest.Column[row]{
//		unnest.Col(func(r row) uuid.UUID { return r.id }),
//		unnest.Col(func(r row) string { return r.name }),
//	}
//
//	tx.Exec(ctx, insertRows, unnest.Arrays(rows, columns...)...)
//
// The same columns give the arguments of a statement's one-row form
// (Values), for a statement that also runs for one row at a time: Postgres
// plans a statement over unnest for every call anew, since its row count
// depends on the arrays, while a statement over plain parameters is
// planned once.
package unnest

// Column reads one column of a Row. Col makes one.
type Column[Row any] interface {
	array(rows []Row) any
	value(row Row) any
}

// Col returns the Column whose value in a row is f of the row.
func Col[Row, Value any](f func(Row) Value) Column[Row] {
	return col[Row, Value](f)
}

type col[Row, Value any] func(Row) Value

func (c col[Row, Value]) array(rows []Row) any {
	out := make([]Value, len(rows))
	for i, r := range rows {
		out[i] = c(r)
	}
	return out
}

func (c col[Row, Value]) value(row Row) any { return c(row) }

// Arrays returns, for each column in order, the slice of its values in
// rows, in the order of rows: the arguments of an unnest of rows.
func Arrays[Row any](rows []Row, columns ...Column[Row]) []any {
	args := make([]any, len(columns))
	for i, c := range columns {
		args[i] = c.array(rows)
	}
	return args
}

// Values returns row's value of each column, in order: the arguments of
// a statement that takes the row as one parameter per column.
func Values[Row any](row Row, columns ...Column[Row]) []any {
	args := make([]any, len(columns))
	for i, c := range columns {
		args[i] = c.value(row)
	}
	return args
}
