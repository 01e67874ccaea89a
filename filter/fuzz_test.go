package filter_test

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/heraldhq/herald/filter"
)

// FuzzParse checks that Parse never panics, that it refuses only with a
// *SyntaxError whose position lies within the filter (or one past its
// end), and that an accepted filter's canonical form (when within
// MaxLength) parses again to the same canonical form and the same verdict
// on a payload.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`type == "invoice.paid"`,
		`data.amount >= 100 and data.currency in ["EUR", "USD"]`,
		`not (exists(data.refund) or data.tags contains "vip")`,
		`data.lines[0]["odd key"] != null`,
		`(((a == 1)))`, `a = 1`, `a == "\u00e9"`, `a in [1,]`, "a == 1 \xff",
	} {
		f.Add(seed)
	}
	doc, err := filter.Decode([]byte(payloads["eur-big"]))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		parsed, err := filter.Parse(src)
		if err != nil {
			var serr *filter.SyntaxError
			if !errors.As(err, &serr) {
				t.Fatalf("Parse(%q): %v is not a *SyntaxError", src, err)
			}
			if serr.Position < 1 || serr.Position > utf8.RuneCountInString(src)+1 {
				t.Fatalf("Parse(%q): position %d outside the filter", src, serr.Position)
			}
			return
		}
		canonical := parsed.String()
		if len(canonical) > filter.MaxLength {
			return // spaces around operators can take it past the limit
		}
		again, err := filter.Parse(canonical)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canonical, src, err)
		}
		if again.String() != canonical {
			t.Fatalf("canonical form of %q is %q, then %q", src, canonical, again.String())
		}
		if parsed.Match(doc) != again.Match(doc) {
			t.Fatalf("%q and its canonical form %q disagree", src, canonical)
		}
	})
}
