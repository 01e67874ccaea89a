package filter

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// tokenKind is what a token is.
type tokenKind int

const (
	tokEnd tokenKind = iota
	tokName
	tokString
	tokNumber
	tokOp     // == != < <= > >=
	tokPunct  // ( ) [ ] , .
	tokBadEq  // a lone "=", refused with a hint
	tokBadOne // any other character the language has no use for
)

// token is one lexeme of a filter; off is its byte offset.
type token struct {
	kind tokenKind
	text string
	off  int
	// str and num are the values of string and number literals.
	str string
	num float64
}

// lexer splits a filter into tokens on demand.
type lexer struct {
	src string
	off int
}

func (l *lexer) errorAt(off int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Position: utf8.RuneCountInString(l.src[:off]) + 1, Problem: fmt.Sprintf(format, args...)}
}

// next returns the next token, or a *SyntaxError for a malformed string or
// number.
func (l *lexer) next() (token, error) {
	for l.off < len(l.src) && isSpace(l.src[l.off]) {
		l.off++
	}
	start := l.off
	if start == len(l.src) {
		return token{kind: tokEnd, off: start}, nil
	}
	c := l.src[start]
	switch {
	case isNameStart(c):
		end := start + 1
		for end < len(l.src) && isNamePart(l.src[end]) {
			end++
		}
		l.off = end
		return token{kind: tokName, text: l.src[start:end], off: start}, nil
	case c == '"':
		return l.string(start)
	case c == '-' || c >= '0' && c <= '9':
		return l.number(start)
	case c == '(' || c == ')' || c == '[' || c == ']' || c == ',' || c == '.':
		l.off++
		return token{kind: tokPunct, text: l.src[start : start+1], off: start}, nil
	case c == '=' || c == '!' || c == '<' || c == '>':
		if start+1 < len(l.src) && l.src[start+1] == '=' {
			l.off += 2
			return token{kind: tokOp, text: l.src[start : start+2], off: start}, nil
		}
		l.off++
		switch c {
		case '<', '>':
			return token{kind: tokOp, text: l.src[start : start+1], off: start}, nil
		case '=':
			return token{kind: tokBadEq, text: "=", off: start}, nil
		}
		return token{kind: tokBadOne, text: "'!'", off: start}, nil
	}
	r, size := utf8.DecodeRuneInString(l.src[start:])
	l.off += size
	if r == utf8.RuneError && size == 1 {
		return token{kind: tokBadOne, text: fmt.Sprintf("byte 0x%02x", c), off: start}, nil
	}
	return token{kind: tokBadOne, text: strconv.QuoteRune(r), off: start}, nil
}

// string reads a JSON string literal starting at start.
func (l *lexer) string(start int) (token, error) {
	end := start + 1
	for end < len(l.src) {
		switch l.src[end] {
		case '\\':
			end += 2
			continue
		case '"':
			var s string
			if err := json.Unmarshal([]byte(l.src[start:end+1]), &s); err != nil {
				return token{}, l.errorAt(start, "the string %s is not a valid JSON string (escapes are \\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t and \\uXXXX)", l.src[start:end+1])
			}
			l.off = end + 1
			return token{kind: tokString, text: l.src[start:l.off], off: start, str: s}, nil
		}
		end++
	}
	return token{}, l.errorAt(start, "the string starting here has no closing double quote")
}

// number reads a JSON number starting at start.
func (l *lexer) number(start int) (token, error) {
	end := start
	for end < len(l.src) && isNumberPart(l.src[end]) {
		end++
	}
	text := l.src[start:end]
	var n float64
	if !json.Valid([]byte(text)) || json.Unmarshal([]byte(text), &n) != nil {
		return token{}, l.errorAt(start, "%s is not a number; write numbers as JSON does, for example 42, -1.5 or 2e3", text)
	}
	l.off = end
	return token{kind: tokNumber, text: text, off: start, num: n}, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isNamePart(c byte) bool { return isNameStart(c) || c == '-' || c >= '0' && c <= '9' }

func isNumberPart(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
