package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Document is a message body decoded once for every filter that reads it.
type Document struct {
	root any
}

// Decode decodes a JSON body for Match. It fails only for text that is not
// JSON.
func Decode(body []byte) (Document, error) {
	var root any
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&root); err != nil {
		return Document{}, fmt.Errorf("decode message body: %w", err)
	}
	return Document{root: root}, nil
}

// Match reports whether doc passes the filter (see the package doc for the
// meaning of each test).
func (f *Filter) Match(doc Document) bool {
	return f.root.match(doc.root)
}

// node is one part of a parsed filter.
type node interface {
	match(root any) bool
	write(b *strings.Builder)
}

type (
	andNode    []node
	orNode     []node
	notNode    struct{ inner node }
	existsNode struct{ path path }
	equalNode  struct {
		path   path
		negate bool
		lit    literal
	}
	orderNode struct {
		path path
		op   string
		num  float64
	}
	inNode struct {
		path path
		lits []literal
	}
	containsNode struct {
		path path
		lit  literal
	}
)

func (n andNode) match(root any) bool {
	for _, c := range n {
		if !c.match(root) {
			return false
		}
	}
	return true
}

func (n orNode) match(root any) bool {
	for _, c := range n {
		if c.match(root) {
			return true
		}
	}
	return false
}

func (n notNode) match(root any) bool { return !n.inner.match(root) }

func (n existsNode) match(root any) bool {
	_, ok := n.path.lookup(root)
	return ok
}

func (n equalNode) match(root any) bool {
	v, ok := n.path.lookup(root)
	return ok && n.lit.equals(v) != n.negate
}

func (n orderNode) match(root any) bool {
	v, ok := n.path.lookup(root)
	x, isNumber := v.(float64)
	if !ok || !isNumber {
		return false
	}
	switch n.op {
	case "<":
		return x < n.num
	case "<=":
		return x <= n.num
	case ">":
		return x > n.num
	}
	return x >= n.num
}

func (n inNode) match(root any) bool {
	v, ok := n.path.lookup(root)
	if !ok {
		return false
	}
	for _, lit := range n.lits {
		if lit.equals(v) {
			return true
		}
	}
	return false
}

func (n containsNode) match(root any) bool {
	v, _ := n.path.lookup(root)
	elems, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range elems {
		if n.lit.equals(e) {
			return true
		}
	}
	return false
}

// step is one step of a path: an object key or an array index.
type step struct {
	key     string
	index   int
	isIndex bool
}

type path []step

// lookup follows p from root and reports whether it found a value.
func (p path) lookup(root any) (any, bool) {
	v := root
	for _, s := range p {
		if s.isIndex {
			elems, ok := v.([]any)
			if !ok || s.index >= len(elems) {
				return nil, false
			}
			v = elems[s.index]
			continue
		}
		object, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = object[s.key]; !ok {
			return nil, false
		}
	}
	return v, true
}

type literalKind int

const (
	litString literalKind = iota
	litNumber
	litBool
	litNull
)

// literal is a value written in a filter; off and text are where and how.
type literal struct {
	kind literalKind
	str  string
	num  float64
	b    bool
	off  int
	text string
}

func (l literal) String() string { return l.text }

// equals reports whether the decoded JSON value v is the literal.
func (l literal) equals(v any) bool {
	switch l.kind {
	case litString:
		s, ok := v.(string)
		return ok && s == l.str
	case litNumber:
		x, ok := v.(float64)
		return ok && x == l.num
	case litBool:
		b, ok := v.(bool)
		return ok && b == l.b
	}
	return v == nil
}

// The canonical form puts parentheses only where the grammar needs them,
// so it nests no deeper than the filter it was parsed from.

func (n andNode) write(b *strings.Builder) {
	for i, c := range n {
		if i > 0 {
			b.WriteString(" and ")
		}
		writeGrouped(b, c, isList(c))
	}
}

func (n orNode) write(b *strings.Builder) {
	for i, c := range n {
		if i > 0 {
			b.WriteString(" or ")
		}
		_, inner := c.(orNode)
		writeGrouped(b, c, inner)
	}
}

func (n notNode) write(b *strings.Builder) {
	b.WriteString("not ")
	writeGrouped(b, n.inner, isList(n.inner))
}

func isList(n node) bool {
	switch n.(type) {
	case andNode, orNode:
		return true
	}
	return false
}

func writeGrouped(b *strings.Builder, n node, parens bool) {
	if !parens {
		n.write(b)
		return
	}
	b.WriteByte('(')
	n.write(b)
	b.WriteByte(')')
}

func (n existsNode) write(b *strings.Builder) {
	b.WriteString("exists(")
	n.path.write(b)
	b.WriteByte(')')
}

func (n equalNode) write(b *strings.Builder) {
	n.path.write(b)
	if n.negate {
		b.WriteString(" != ")
	} else {
		b.WriteString(" == ")
	}
	n.lit.write(b)
}

func (n orderNode) write(b *strings.Builder) {
	n.path.write(b)
	b.WriteString(" " + n.op + " ")
	b.WriteString(strconv.FormatFloat(n.num, 'g', -1, 64))
}

func (n inNode) write(b *strings.Builder) {
	n.path.write(b)
	b.WriteString(" in [")
	for i, lit := range n.lits {
		if i > 0 {
			b.WriteString(", ")
		}
		lit.write(b)
	}
	b.WriteByte(']')
}

func (n containsNode) write(b *strings.Builder) {
	n.path.write(b)
	b.WriteString(" contains ")
	n.lit.write(b)
}

func (p path) write(b *strings.Builder) {
	for i, s := range p {
		switch {
		case i == 0:
			b.WriteString(s.key) // the grammar makes the first step a name
		case s.isIndex:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case isName(s.key):
			b.WriteString("." + s.key)
		default:
			b.WriteString("[" + quote(s.key) + "]")
		}
	}
}

func (l literal) write(b *strings.Builder) {
	switch l.kind {
	case litString:
		b.WriteString(quote(l.str))
	case litNumber:
		b.WriteString(strconv.FormatFloat(l.num, 'g', -1, 64))
	case litBool:
		b.WriteString(strconv.FormatBool(l.b))
	default:
		b.WriteString("null")
	}
}

// isName reports whether key can be written after a ".".
func isName(key string) bool {
	if key == "" || !isNameStart(key[0]) {
		return false
	}
	for i := 1; i < len(key); i++ {
		if !isNamePart(key[i]) {
			return false
		}
	}
	return true
}

func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}
