package filter

import (
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by every *SyntaxError.
var ErrSyntax = errors.New("filter syntax error")

// SyntaxError is Parse's refusal of a filter: where it went wrong and why.
type SyntaxError struct {
	// Position is the character (not byte) at which the problem starts,
	// counting from 1; one past the last character for a filter that ends
	// too soon.
	Position int
	// Problem says what is wrong there and how to fix it.
	Problem string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("at character %d: %s", e.Position, e.Problem)
}

func (e *SyntaxError) Unwrap() error { return ErrSyntax }
