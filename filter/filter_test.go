package filter_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/filter"
)

// payloads are message bodies as Herald sends them.
var payloads = map[string]string{
	"eur-big": `{"type":"invoice.paid","timestamp":"2026-12-02T12:00:00Z","object":{"id":"inv_1","version":3},
		"data":{"amount":4200,"currency":"EUR","customer":{"country":"DE","email":"a@example.com"},"tags":["vip","eu"],"lines":[{"sku":"A-1"}],"refund":null,"odd key":true}}`,
	"usd-small": `{"type":"invoice.paid","timestamp":"2026-12-02T12:00:00Z","object":{"id":"inv_2","version":1},
		"data":{"amount":99.5,"currency":"USD","customer":{"country":"US"},"tags":[],"lines":[]}}`,
	"voided": `{"type":"invoice.voided","timestamp":"2026-12-02T12:00:00Z","object":{"id":"inv_3","version":2},
		"data":{"amount":"100","currency":"EUR","tags":"vip"}}`,
	"empty": `{"type":"ping","timestamp":"2026-12-02T12:00:00Z","object":{"id":"p","version":1},"data":{}}`,
}

// TestMatch is the evaluator's table: every filter against every payload,
// with the payloads that pass; all others must not.
func TestMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		filter string
		passes []string
	}{
		// equality and inequality
		{`type == "invoice.paid"`, []string{"eur-big", "usd-small"}},
		{`type != "invoice.paid"`, []string{"voided", "empty"}},
		{`data.currency == "EUR"`, []string{"eur-big", "voided"}},
		{`data.currency == "eur"`, nil},
		{`data.currency != "EUR"`, []string{"usd-small"}}, // absent: false
		{`not (data.currency == "EUR")`, []string{"usd-small", "empty"}},
		{`data.amount == 4200`, []string{"eur-big"}},
		{`data.amount == 4200.0`, []string{"eur-big"}},
		{`data.amount == "100"`, []string{"voided"}},
		{`data.amount == 100`, nil}, // a string is no number
		{`data.refund == null`, []string{"eur-big"}},
		{`data.refund != null`, nil},
		{`data["odd key"] == true`, []string{"eur-big"}},
		{`data["odd key"] == false`, nil},
		{`data.customer == "DE"`, nil}, // an object equals no literal
		{`data.customer != "DE"`, []string{"eur-big", "usd-small"}},
		{`object.version == 1`, []string{"usd-small", "empty"}},
		{`data.lines[0].sku == "A-1"`, []string{"eur-big"}},
		{`data.lines[1].sku == "A-1"`, nil},
		{`data.tags[0] == "vip"`, []string{"eur-big"}},
		{`data.tags[0] != "vip"`, nil},
		{`data.currency.code == "EUR"`, nil}, // a key of a string
		// numeric comparison
		{`data.amount > 100`, []string{"eur-big"}},
		{`data.amount >= 99.5`, []string{"eur-big", "usd-small"}},
		{`data.amount < 100`, []string{"usd-small"}},
		{`data.amount <= 4200`, []string{"eur-big", "usd-small"}},
		{`data.amount < 1e10`, []string{"eur-big", "usd-small"}},
		{`data.amount > -1`, []string{"eur-big", "usd-small"}},
		{`object.version >= 2`, []string{"eur-big", "voided"}},
		// membership
		{`data.currency in ["EUR", "GBP"]`, []string{"eur-big", "voided"}},
		{`data.currency in ["JPY"]`, nil},
		{`data.amount in [99.5, 4200]`, []string{"eur-big", "usd-small"}},
		{`data.refund in [null, 1]`, []string{"eur-big"}},
		{`data.tags contains "vip"`, []string{"eur-big"}}, // voided's tags is a string
		{`data.tags contains "us"`, nil},
		{`data.lines contains "A-1"`, nil}, // elements are objects
		// existence
		{`exists(data.refund)`, []string{"eur-big"}},
		{`exists(data.customer.email)`, []string{"eur-big"}},
		{`exists(data)`, []string{"eur-big", "usd-small", "voided", "empty"}},
		{`not exists(data.customer)`, []string{"voided", "empty"}},
		{`exists(data.lines[0])`, []string{"eur-big"}},
		// and, or, not, precedence
		{`data.currency == "EUR" and data.amount > 1000`, []string{"eur-big"}},
		{`data.currency == "USD" or type == "ping"`, []string{"usd-small", "empty"}},
		{`type == "ping" or data.currency == "EUR" and data.amount > 1000`, []string{"eur-big", "empty"}},
		{`(type == "ping" or data.currency == "EUR") and exists(data.tags)`, []string{"eur-big", "voided"}},
		{`not not type == "ping"`, []string{"empty"}},
		{`not (type == "ping" or type == "invoice.voided")`, []string{"eur-big", "usd-small"}},
		{"data.customer.country in [\"DE\", \"FR\"]\n\tand data.tags contains \"eu\"", []string{"eur-big"}},
		// keys that are keywords, after a dot
		{`data.not == 1 or data.in == 2`, nil},
	}
	docs := make(map[string]filter.Document, len(payloads))
	for name, body := range payloads {
		doc, err := filter.Decode([]byte(body))
		require.NoError(t, err, name)
		docs[name] = doc
	}
	for _, c := range cases {
		f, err := filter.Parse(c.filter)
		require.NoError(t, err, c.filter)
		again, err := filter.Parse(f.String())
		require.NoError(t, err, "canonical form %q of %q", f.String(), c.filter)
		for name, doc := range docs {
			want := contains(c.passes, name)
			require.Equal(t, want, f.Match(doc), "filter %q on payload %s", c.filter, name)
			require.Equal(t, want, again.Match(doc), "canonical %q on payload %s", f.String(), name)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestString(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`a==1`:                             `a == 1`,
		`(a == 1)`:                         `a == 1`,
		`a == 1 and b == 2 or c == 3`:      `a == 1 and b == 2 or c == 3`,
		`a == 1 and (b == 2 or c == 3)`:    `a == 1 and (b == 2 or c == 3)`,
		`not (a == 1 and b == 2)`:          `not (a == 1 and b == 2)`,
		`x["a b"][2].c in ["é", 1e3,null]`: `x["a b"][2].c in ["é", 1000, null]`,
		`exists( x . y )`:                  `exists(x.y)`,
	} {
		f, err := filter.Parse(src)
		require.NoError(t, err, src)
		require.Equal(t, want, f.String(), src)
	}
}

// TestSyntaxErrors checks that every refusal names the character where
// the problem starts and says what was expected.
func TestSyntaxErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		src      string
		position int
		problem  string
	}{
		{``, 1, "the filter is empty"},
		{`   `, 1, "the filter is empty"},
		{`data.amount = 5`, 13, `found "="; compare with ==`},
		{`data.amount >`, 14, "expected a value"},
		{`data.amount > "5"`, 15, `> compares numbers`},
		{`data.amount`, 12, "expected ==, !=, <, <=, >, >=, in or contains"},
		{`data.currency == EUR`, 18, `found the name EUR; quote strings, as in "EUR"`},
		{`data.currency == "EUR`, 18, "no closing double quote"},
		{`data.x == "a\qb"`, 11, "not a valid JSON string"},
		{`data.x == 1.2.3`, 11, "1.2.3 is not a number"},
		{`data.x == 1e999`, 11, "1e999 is not a number"},
		{`(data.x == 1`, 13, `expected ")"`},
		{`data.x == 1)`, 12, `expected and, or, or the end of the filter, found ")"`},
		{`data.x == 1 and`, 16, "expected a path"},
		{`data.x == 1 && data.y == 2`, 13, `expected and, or, or the end of the filter, found '&'`},
		{`data. == 1`, 7, `expected a key after "."`},
		{`data[-1] == 1`, 6, "an array index"},
		{`data[1.5] == 1`, 6, "an array index"},
		{`data[0 == 1`, 8, `expected "]"`},
		{`data.x in []`, 12, "expected a value"},
		{`data.x in ["a" "b"]`, 16, `expected "," or "]"`},
		{`data.x in "a"`, 11, `expected "[" to start the list`},
		{`exists data.x`, 8, `expected "(" after exists`},
		{`exists(data.x == 1)`, 15, `expected ")" after the path of exists`},
		{`in == 1`, 1, "expected a path into the message"},
		{`é == 1`, 1, `expected a path into the message, such as data.amount, found 'é'`},
		{`data.é == 1`, 6, `expected a key after "."`},
		{"data.x == 1 and \xff", 17, "found byte 0xff"},
		{`données.x == 1`, 5, `expected ==`},
		{`data.x == 1 and data.y ! 2`, 24, `found '!'`},
		{strings.Repeat("(", filter.MaxDepth+1) + "a == 1" + strings.Repeat(")", filter.MaxDepth+1), filter.MaxDepth + 1, "nests more than 32 levels"},
		{strings.Repeat("not ", filter.MaxDepth+1) + "a == 1", 4*filter.MaxDepth + 1, "nests more than 32 levels"},
		{"a" + strings.Repeat(".a", 32) + " == 1", 64, "more than 32 steps"},
		{"a == \"" + strings.Repeat("x", filter.MaxLength) + "\"", 1, "at most 4096 are allowed"},
	}
	for _, c := range cases {
		_, err := filter.Parse(c.src)
		var serr *filter.SyntaxError
		require.True(t, errors.As(err, &serr), "%q: want a *SyntaxError, got %v", c.src, err)
		require.ErrorIs(t, err, filter.ErrSyntax)
		require.Equal(t, c.position, serr.Position, "%q: %v", c.src, err)
		require.Contains(t, serr.Problem, c.problem, c.src)
		require.Equal(t, fmt.Sprintf("at character %d: %s", serr.Position, serr.Problem), err.Error())
	}
}

// TestBounds checks that the largest filters the bounds allow parse and
// match: deep nesting at MaxDepth, long chains, long lists.
func TestBounds(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("(", filter.MaxDepth) + `type == "ping"` + strings.Repeat(")", filter.MaxDepth)
	nots := strings.Repeat("not ", filter.MaxDepth) + `type == "ping"`
	chain := "a == 0" + strings.Repeat(" or a == 0", (filter.MaxLength-6)/10)
	list := "data.n in [0" + strings.Repeat(",1", (filter.MaxLength-14)/2) + "]"
	doc, err := filter.Decode([]byte(payloads["empty"]))
	require.NoError(t, err)
	for src, want := range map[string]bool{deep: true, nots: true, chain: false, list: false} {
		require.LessOrEqual(t, len(src), filter.MaxLength)
		f, err := filter.Parse(src)
		require.NoError(t, err, "%.40s…", src)
		require.Equal(t, want, f.Match(doc))
		if canonical := f.String(); len(canonical) <= filter.MaxLength {
			_, err = filter.Parse(canonical)
			require.NoError(t, err, "the canonical form of %.40s…", src)
		}
	}
}

func TestDecodeRefusesWhatIsNotJSON(t *testing.T) {
	t.Parallel()
	_, err := filter.Decode([]byte(`{"type":`))
	require.ErrorContains(t, err, "decode message body")
}
