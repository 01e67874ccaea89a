// Package sanitize makes text that came from the network storable in
// Postgres. Every string Herald stores that an endpoint, a resolver or a
// TLS peer chose the bytes of (attempt errors and deliveries.last_error,
// response excerpts, the headers stored with an attempt) goes through
// [Text] first.
//
// Postgres refuses two things in text and jsonb: byte sequences that are
// not UTF-8 and the character NUL (SQLSTATE 22021; in jsonb, 22P05 for
// "\u0000"). Either one in a value fails the whole statement. When that
// statement records an attempt, the attempt is lost and the job fails
// again at every try: an endpoint whose TLS certificate names a host with
// a NUL byte, which Go's verification error quotes, did exactly that.
package sanitize

import (
	"strings"
	"unicode/utf8"
)

// Marker ends a text that [Text] cut short, so that a reader knows there
// was more.
const Marker = "… [truncated]"

// replacement stands in for what Postgres cannot hold.
const replacement = "\uFFFD"

// Text returns s as text Postgres stores in text and jsonb columns, at most
// limit bytes long:
//
//   - each run of bytes that is not UTF-8 becomes U+FFFD, the replacement
//     character (as [strings.ToValidUTF8]);
//   - each NUL becomes U+FFFD too, so the reader sees that something was
//     there;
//   - a result longer than limit bytes is cut at a character boundary and
//     ends with [Marker], the whole at most limit bytes; a limit shorter
//     than Marker cuts without it. A negative limit counts as zero.
//
// Text is idempotent, Text(Text(s, n), n) == Text(s, n), and returns s
// itself when s is already storable and within limit.
func Text(s string, limit int) string {
	limit = max(limit, 0)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, replacement)
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", replacement)
	}
	if len(s) <= limit {
		return s
	}
	if limit < len(Marker) {
		return s[:runeStart(s, limit)]
	}
	return s[:runeStart(s, limit-len(Marker))] + Marker
}

// runeStart returns the largest index i <= n at which a character of s
// starts (or len(s)), so that s[:i] is whole characters. n must be at most
// len(s).
func runeStart(s string, n int) int {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
