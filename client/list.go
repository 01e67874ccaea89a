package client

import (
	"context"
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

// All walks every page of a list, 200 items a page, and returns the items
// in the order the API gives them. list is one of the List methods with its
// other arguments bound, for example:
//
//	endpoints, err := client.All(ctx, func(ctx context.Context, o client.ListOptions) (client.Page[client.Endpoint], error) {
//		return c.ListEndpoints(ctx, "acme", o)
//	})
func All[T any](ctx context.Context, list func(context.Context, ListOptions) (Page[T], error)) ([]T, error) {
	var all []T
	opts := ListOptions{Limit: 200}
	for {
		p, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Data...)
		if p.Next == "" {
			return all, nil
		}
		opts.After = p.Next
	}
}
