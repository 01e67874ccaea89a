// Package page is Herald's keyset pagination: lists are ordered newest first
// by (created_at, id) and a page ends with an opaque cursor naming its last
// row. Rows inserted while a client pages never shift the pages it has not
// read yet, so nothing is returned twice and nothing that existed is skipped.
package page

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultLimit is the page size when a client gives none.
const DefaultLimit = 50

// MaxLimit is the largest page a client may ask for.
const MaxLimit = 200

// Cursor names the last row of a page: its creation time and its id.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// ErrInvalidCursor means a cursor was not produced by Herald.
var ErrInvalidCursor = errors.New("invalid cursor")

// String encodes the cursor for a client; clients treat it as opaque.
func (c Cursor) String() string {
	raw := strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + "." + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseCursor decodes a cursor made by String.
func ParseCursor(s string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, ErrInvalidCursor
	}
	micros, id, ok := strings.Cut(string(raw), ".")
	if !ok || id == "" {
		return Cursor{}, ErrInvalidCursor
	}
	n, err := strconv.ParseInt(micros, 10, 64)
	if err != nil {
		return Cursor{}, ErrInvalidCursor
	}
	return Cursor{CreatedAt: time.UnixMicro(n).UTC(), ID: id}, nil
}

// Request is what a client asked for: at most Limit rows older than After.
type Request struct {
	// Limit is the page size, 1..MaxLimit. Zero means DefaultLimit.
	Limit int
	// After is the cursor of the previous page's last row; nil for the first page.
	After *Cursor
}

// Size returns the page size with the default applied.
func (r Request) Size() int {
	if r.Limit <= 0 {
		return DefaultLimit
	}
	return min(r.Limit, MaxLimit)
}

// AfterTime and AfterID are the cursor's parts as query arguments: both nil
// on the first page, so a query can write
// ($1::timestamptz IS NULL OR (created_at, id) < ($1, $2)).
func (r Request) AfterTime() *time.Time {
	if r.After == nil {
		return nil
	}
	return &r.After.CreatedAt
}

// AfterID is the id half of the cursor; see AfterTime.
func (r Request) AfterID() *string {
	if r.After == nil {
		return nil
	}
	return &r.After.ID
}

// Page is one page of a list.
type Page[T any] struct {
	Items []T
	// Next is the cursor for the following page; nil on the last page.
	Next *Cursor
}

// Trim builds a page from rows fetched with LIMIT Size()+1: the extra row,
// when present, only proves there is a next page. key returns a row's cursor.
func Trim[T any](r Request, rows []T, key func(T) Cursor) Page[T] {
	if rows == nil {
		rows = []T{}
	}
	if len(rows) <= r.Size() {
		return Page[T]{Items: rows}
	}
	rows = rows[:r.Size()]
	next := key(rows[len(rows)-1])
	return Page[T]{Items: rows, Next: &next}
}

// ParamError names the query parameter a client got wrong.
type ParamError struct {
	Param   string
	Message string
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Message }

// ParseRequest reads the limit and after query parameters. Empty strings
// mean the defaults.
func ParseRequest(limit, after string) (Request, error) {
	var r Request
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxLimit {
			return Request{}, &ParamError{Param: "limit", Message: fmt.Sprintf("limit must be a whole number from 1 to %d, got %q", MaxLimit, limit)}
		}
		r.Limit = n
	}
	if after != "" {
		c, err := ParseCursor(after)
		if err != nil {
			return Request{}, &ParamError{Param: "after", Message: "after must be the next cursor of a previous page of this list, exactly as returned"}
		}
		r.After = &c
	}
	return r, nil
}
