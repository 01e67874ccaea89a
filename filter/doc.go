// Package filter is the language of endpoint filters: a condition on the
// JSON body of a message that decides, at fan-out, whether an endpoint
// receives it.
//
// A filter reads paths into the body Herald sends ({"type", "timestamp",
// "object": {"id", "version"}, "data": {…}}) and compares them with
// literals:
//
//	data.amount >= 100 and data.currency in ["EUR", "USD"]
//	type == "invoice.paid" or exists(data.refund)
//	not (data.customer.country == "DE") and data.tags contains "vip"
//	data.lines[0].sku == "A-1" and data["odd key"] != null
//
// # Grammar
//
//	filter     = or
//	or         = and { "or" and }
//	and        = unary { "and" unary }
//	unary      = "not" unary | "(" or ")" | "exists" "(" path ")" | test
//	test       = path ( cmp literal | "in" "[" literal { "," literal } "]" | "contains" literal )
//	cmp        = "==" | "!=" | "<" | "<=" | ">" | ">="
//	path       = name { "." name | "[" integer "]" | "[" string "]" }
//	literal    = string | number | "true" | "false" | "null"
//
// Names are letters, digits, "_" and "-", not starting with a digit or
// "-"; after a "." any name is a key, keywords included (data.not). Strings
// are JSON strings in double quotes, numbers JSON numbers. "and" binds
// tighter than "or"; whitespace (newlines included) separates tokens.
//
// # Meaning
//
//   - A path that is absent (a missing key, an index past the end, a key
//     of something that is not an object) makes every test on it false,
//     "!=" included: data.x != 1 holds only when data.x exists and is not
//     1. Write not (data.x == 1) to include messages without data.x.
//   - == and != compare JSON values: numbers numerically (1 == 1.0),
//     strings exactly (case matters), true, false and null as themselves.
//     An object or array equals no literal.
//   - <, <=, > and >= compare numbers only; their literal must be a number
//     (anything else is a syntax error) and a value that is not a number
//     makes them false. Numbers are IEEE doubles, exact up to 2^53.
//   - in holds when the value equals one of the literals; contains when
//     the value is an array with an element equal to the literal.
//   - exists(p) holds when p is present, with any value, null included.
//
// # Bounds
//
// A filter is at most MaxLength bytes and nests at most MaxDepth levels of
// parentheses and "not"; Parse refuses anything larger with a
// *SyntaxError. There are no loops, functions or regular expressions:
// Match visits each test once and each path step once, so its cost is
// linear in the filter's length, whatever the payload.
package filter
