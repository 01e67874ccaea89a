package filter

import (
	"strconv"
	"strings"
)

// MaxLength is the longest filter Parse accepts: 4096 bytes.
const MaxLength = 4096

// MaxDepth is how deeply Parse lets parentheses and "not" nest: 32 levels.
// Chains of "and" and "or" are flat and do not count.
const MaxDepth = 32

// maxPathSteps bounds one path: more steps than any payload needs, and few
// enough that a path cannot make Match slow.
const maxPathSteps = 32

// Filter is a parsed filter, safe for concurrent use.
type Filter struct {
	root node
}

// Parse parses src. A filter that is empty, longer than MaxLength, nested
// deeper than MaxDepth or not in the grammar (see the package doc) is a
// *SyntaxError naming the character where the problem starts.
func Parse(src string) (*Filter, error) {
	if len(src) > MaxLength {
		return nil, &SyntaxError{Position: 1, Problem: "the filter is " + strconv.Itoa(len(src)) + " bytes long; at most " + strconv.Itoa(MaxLength) + " are allowed"}
	}
	p := &parser{lex: lexer{src: src}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEnd {
		return nil, &SyntaxError{Position: 1, Problem: "the filter is empty; write a condition such as data.amount > 100, or send no filter"}
	}
	root, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEnd {
		return nil, p.unexpected("and, or, or the end of the filter")
	}
	return &Filter{root: root}, nil
}

// String returns the filter in canonical form, which Parse reads back to
// the same filter. It may be longer than the source it was parsed from
// (it spaces every operator), and so past MaxLength.
func (f *Filter) String() string {
	var b strings.Builder
	f.root.write(&b)
	return b.String()
}

type parser struct {
	lex lexer
	tok token
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// describe names a token for an error message.
func describe(t token) string {
	switch t.kind {
	case tokEnd:
		return "the end of the filter"
	case tokBadOne:
		return t.text
	}
	return strconv.Quote(t.text)
}

func (p *parser) unexpected(want string) *SyntaxError {
	if p.tok.kind == tokBadEq {
		return p.lex.errorAt(p.tok.off, "found \"=\"; compare with == (or !=, <, <=, >, >=)")
	}
	return p.lex.errorAt(p.tok.off, "expected %s, found %s", want, describe(p.tok))
}

func (p *parser) isName(name string) bool { return p.tok.kind == tokName && p.tok.text == name }

func (p *parser) isPunct(c string) bool { return p.tok.kind == tokPunct && p.tok.text == c }

func (p *parser) expectPunct(c, want string) error {
	if !p.isPunct(c) {
		return p.unexpected(want)
	}
	return p.advance()
}

func (p *parser) or(depth int) (node, error) {
	first, err := p.and(depth)
	if err != nil || !p.isName("or") {
		return first, err
	}
	n := orNode{first}
	for p.isName("or") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		next, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		n = append(n, next)
	}
	return n, nil
}

func (p *parser) and(depth int) (node, error) {
	first, err := p.unary(depth)
	if err != nil || !p.isName("and") {
		return first, err
	}
	n := andNode{first}
	for p.isName("and") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		next, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		n = append(n, next)
	}
	return n, nil
}

func (p *parser) unary(depth int) (node, error) {
	if (p.isName("not") || p.isPunct("(")) && depth >= MaxDepth {
		return nil, p.lex.errorAt(p.tok.off, "the filter nests more than %d levels of parentheses and not; simplify it", MaxDepth)
	}
	switch {
	case p.isName("not"):
		if err := p.advance(); err != nil {
			return nil, err
		}
		inner, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return notNode{inner}, nil
	case p.isPunct("("):
		if err := p.advance(); err != nil {
			return nil, err
		}
		inner, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.expectPunct(")", "\")\", and or or"); err != nil {
			return nil, err
		}
		return inner, nil
	case p.isName("exists"):
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expectPunct("(", "\"(\" after exists, as in exists(data.id)"); err != nil {
			return nil, err
		}
		path, err := p.path()
		if err != nil {
			return nil, err
		}
		if err := p.expectPunct(")", "\")\" after the path of exists"); err != nil {
			return nil, err
		}
		return existsNode{path}, nil
	}
	return p.test()
}

// keywords may not start a path, where they would be misread.
var keywords = map[string]bool{"and": true, "or": true, "not": true, "in": true, "contains": true,
	"exists": true, "true": true, "false": true, "null": true}

func (p *parser) path() (path, error) {
	if p.tok.kind != tokName || keywords[p.tok.text] {
		return nil, p.unexpected("a path into the message, such as data.amount")
	}
	steps := path{{key: p.tok.text}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	for p.isPunct(".") || p.isPunct("[") {
		if len(steps) == maxPathSteps {
			return nil, p.lex.errorAt(p.tok.off, "the path has more than %d steps", maxPathSteps)
		}
		if p.isPunct(".") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != tokName {
				return nil, p.unexpected("a key after \".\" (write [\"key\"] for a key that is not a name)")
			}
			steps = append(steps, step{key: p.tok.text})
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		switch {
		case p.tok.kind == tokString:
			steps = append(steps, step{key: p.tok.str})
		case p.tok.kind == tokNumber && isIndex(p.tok.text):
			i, err := strconv.Atoi(p.tok.text)
			if err != nil {
				return nil, p.lex.errorAt(p.tok.off, "the index %s is too large", p.tok.text)
			}
			steps = append(steps, step{index: i, isIndex: true})
		default:
			return nil, p.unexpected("an array index (0, 1, …) or a quoted key inside [ ]")
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expectPunct("]", "\"]\""); err != nil {
			return nil, err
		}
	}
	return steps, nil
}

// isIndex reports whether a number token is a non-negative integer.
func isIndex(text string) bool {
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return false
		}
	}
	return text != ""
}

func (p *parser) test() (node, error) {
	path, err := p.path()
	if err != nil {
		return nil, err
	}
	switch {
	case p.tok.kind == tokOp:
		op := p.tok
		if err := p.advance(); err != nil {
			return nil, err
		}
		lit, err := p.literal()
		if err != nil {
			return nil, err
		}
		if op.text != "==" && op.text != "!=" {
			if lit.kind != litNumber {
				return nil, p.lex.errorAt(lit.off, "%s compares numbers; put a number after it, or use == or != for %s", op.text, lit)
			}
			return orderNode{path: path, op: op.text, num: lit.num}, nil
		}
		return equalNode{path: path, negate: op.text == "!=", lit: lit}, nil
	case p.isName("in"):
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expectPunct("[", "\"[\" to start the list after in, as in in [\"a\", \"b\"]"); err != nil {
			return nil, err
		}
		n := inNode{path: path}
		for {
			lit, err := p.literal()
			if err != nil {
				return nil, err
			}
			n.lits = append(n.lits, lit)
			if p.isPunct("]") {
				break
			}
			if err := p.expectPunct(",", "\",\" or \"]\" in the list"); err != nil {
				return nil, err
			}
		}
		return n, p.advance()
	case p.isName("contains"):
		if err := p.advance(); err != nil {
			return nil, err
		}
		lit, err := p.literal()
		if err != nil {
			return nil, err
		}
		return containsNode{path: path, lit: lit}, nil
	}
	return nil, p.unexpected("==, !=, <, <=, >, >=, in or contains after the path")
}

func (p *parser) literal() (literal, error) {
	t := p.tok
	lit := literal{off: t.off, text: t.text}
	switch {
	case t.kind == tokString:
		lit.kind, lit.str = litString, t.str
	case t.kind == tokNumber:
		lit.kind, lit.num = litNumber, t.num
	case p.isName("true"), p.isName("false"):
		lit.kind, lit.b = litBool, t.text == "true"
	case p.isName("null"):
		lit.kind = litNull
	case t.kind == tokName:
		return literal{}, p.lex.errorAt(t.off, "expected a value, found the name %s; quote strings, as in \"%s\"", t.text, t.text)
	default:
		return literal{}, p.unexpected("a value: a \"string\", a number, true, false or null")
	}
	return lit, p.advance()
}
