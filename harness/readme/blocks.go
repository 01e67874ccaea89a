// Package readme keeps the README's shell examples working: its test
// extracts every fenced sh block of README.md and runs them, in order, in
// bash against a real api and dispatcher on loopback, with the variables
// the blocks use (HERALD_API_URL, HERALD_API_KEY) set as `make run` would
// set them. A block that fails fails the test, named by its line, with
// its output. Blocks that start Herald or run a proof for minutes (make,
// docker compose) are listed in the test with the reason they are not run.
package readme

import (
	"bufio"
	"bytes"
	"strings"
)

// Block is one fenced code block of a Markdown document.
type Block struct {
	// Line is the 1-based line of the opening fence.
	Line int
	// Lang is the info string's first word ("sh", "go"); empty when none.
	Lang string
	// Text is the block's content, lines joined by "\n", ending in one.
	Text string
}

// Blocks returns the fenced code blocks of markdown (``` fences at the
// start of a line) in order. An unclosed block runs to the end.
func Blocks(markdown []byte) []Block {
	var (
		out     []Block
		current *Block
		text    strings.Builder
	)
	s := bufio.NewScanner(bytes.NewReader(markdown))
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; s.Scan(); line++ {
		l := s.Text()
		if !strings.HasPrefix(l, "```") {
			if current != nil {
				text.WriteString(l + "\n")
			}
			continue
		}
		if current != nil {
			current.Text = text.String()
			out = append(out, *current)
			current = nil
			continue
		}
		lang, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(l, "```")), " ")
		current = &Block{Line: line, Lang: lang}
		text.Reset()
	}
	if current != nil {
		current.Text = text.String()
		out = append(out, *current)
	}
	return out
}
