package sanitize_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/sanitize"
)

func TestText(t *testing.T) {
	t.Parallel()

	long := strings.Repeat("a", 40)
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"storable text is kept", "ok", 10, "ok"},
		{"NUL becomes the replacement character", "herald\x00.example", 100, "herald\uFFFD.example"},
		{"invalid UTF-8 is replaced", "a\xffb", 10, "a\uFFFDb"},
		{"a run of invalid bytes is replaced once", "a\xff\xfeb", 10, "a\uFFFDb"},
		{"an encoded surrogate is not UTF-8", "a\xed\xa0\x80b", 10, "a\uFFFDb"},
		{"long text is cut and marked", long, 20, long[:20-len(sanitize.Marker)] + sanitize.Marker},
		{"text of exactly the limit is kept", long, 40, long},
		{"a character is not split", "a" + strings.Repeat("é", 20), 16, "a" + sanitize.Marker},
		{"a limit below the marker cuts without it", "abcdef", 4, "abcd"},
		{"a character is not split without the marker", "aé", 2, "a"},
		{"a replacement is not split", "\xff\xff", 2, ""},
		{"a negative limit keeps nothing", "abc", -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sanitize.Text(tt.in, tt.limit)
			require.Equal(t, tt.want, got)
			require.LessOrEqual(t, len(got), max(tt.limit, 0))
		})
	}
}

// FuzzSanitize checks Text's promises for any input: the result is UTF-8
// without NUL, within the limit, unchanged by a second pass, and the input
// itself when that was already storable and short enough.
func FuzzSanitize(f *testing.F) {
	for _, seed := range []string{"", "ok", "herald\x00.example", "a\xffb", "\xed\xa0\x80", "aé" + sanitize.Marker, strings.Repeat("é", 40)} {
		f.Add(seed, uint16(16))
	}
	f.Fuzz(func(t *testing.T, s string, limit uint16) {
		got := sanitize.Text(s, int(limit))
		if !utf8.ValidString(got) {
			t.Fatalf("Text(%q, %d) = %q: not UTF-8", s, limit, got)
		}
		if strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("Text(%q, %d) = %q: holds a NUL", s, limit, got)
		}
		if len(got) > int(limit) {
			t.Fatalf("Text(%q, %d) = %q: %d bytes, over the limit", s, limit, got, len(got))
		}
		if again := sanitize.Text(got, int(limit)); again != got {
			t.Fatalf("Text is not idempotent: Text(%q, %d) = %q, then %q", s, limit, got, again)
		}
		if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 && len(s) <= int(limit) && got != s {
			t.Fatalf("Text(%q, %d) = %q: storable text within the limit must be kept", s, limit, got)
		}
	})
}
