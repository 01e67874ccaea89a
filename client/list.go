package client

import (
	"net/url"
	"strconv"
)

// ListOptions pages a list. The zero value asks for the first page at the
// API's default size (50).
type ListOptions struct {
	// Limit is the page size, 1 to 200. Zero means the API's default.
	Limit int
	// After is the Next of the previous page. Empty means the first page.
	After string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	return q
}

// Page is one page of a list.
type Page[T any] struct {
	Data []T `json:"data"`
	// Next, when not empty, is ListOptions.After for the following page.
	Next string `json:"next,omitempty"`
}
