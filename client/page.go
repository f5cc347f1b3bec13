package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"
)

// Page is one page of a list: its items and the cursor of the next page,
// "" on the last. A page holds at most its limit of items and may end
// earlier (4 MiB of items), so page until NextCursor is "" (or use All).
type Page[T any] struct {
	Data       []T    `json:"data"`
	NextCursor string `json:"next_cursor"`
}

// ListParams are the paging parameters every list takes: Limit items at
// most (1 to 1000; 0 sends none, and the API's default is 100) and the
// Cursor of the page to get ("" for the first).
type ListParams struct {
	Limit  int
	Cursor string
}

// values returns the paging query parameters.
func (p ListParams) values() url.Values {
	q := url.Values{}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	setIf(q, "cursor", p.Cursor)
	return q
}

// setIf sets q's key to v when v is not empty.
func setIf(q url.Values, key, v string) {
	if v != "" {
		q.Set(key, v)
	}
}

// All yields every item of a list, page by page: it calls list with ""
// and then with each page's NextCursor, until a page's NextCursor is "",
// list returns an error (yielded once, as the last value), the cursor
// comes back unchanged (an error too), or the loop stops. It holds one
// page at a time.
//
//	p := client.DeliveryListParams{SubscriptionID: id}
//	for d, err := range client.All(ctx, func(ctx context.Context, cursor string) (*client.Page[client.Delivery], error) {
//		p.Cursor = cursor
//		return c.Deliveries.List(ctx, p)
//	}) { … }
func All[T any](ctx context.Context, list func(ctx context.Context, cursor string) (*Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		cursor := ""
		for {
			page, err := list(ctx, cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, item := range page.Data {
				if !yield(item, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			if page.NextCursor == cursor {
				yield(zero, errRepeatedCursor)
				return
			}
			cursor = page.NextCursor
		}
	}
}
