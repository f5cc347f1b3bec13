package console

import (
	"context"
	"net/http"
	"net/url"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/store"
)

// accountList is a page of a list of one account's items (of every
// account for an admin who picked none): the subscriptions and endpoints
// lists.
type accountList[T any] struct {
	// Accounts are the admin's choices: the first store.MaxLimit
	// accounts (another is reached with ?account_id=).
	Accounts []account.Account
	// Account is the account shown; "" for every account.
	Account string
	Items   []T
	pageLinks
}

// accountPage reads a page of listSize items of the list at path: of the
// key's own account, or for an admin of the account picked (?account_id=,
// every account when none), after ?cursor=; list reads the page from the
// store, row makes each item's row. It reports false when it answered an
// error page instead.
func accountPage[S, T any](b base, w http.ResponseWriter, r *http.Request, v *visit, path string,
	list func(ctx context.Context, accountID string, p store.Page) ([]S, string, error), row func(S) T) (accountList[T], bool) {
	acc, ok := b.accountParam(w, r, v)
	if !ok {
		return accountList[T]{}, false
	}
	cursor := r.URL.Query().Get("cursor")
	items, next, err := list(r.Context(), acc, store.Page{Cursor: cursor, Limit: listSize})
	if err != nil {
		b.storeError(w, r, v, err)
		return accountList[T]{}, false
	}
	view := accountList[T]{Account: acc}
	for _, it := range items {
		view.Items = append(view.Items, row(it))
	}
	view.pageLinks = newPageLinks(cursor, next, func(c string) string { return accountListURL(path, acc, c) })
	view.Accounts, ok = b.accountChoices(w, r, v)
	return view, ok
}

// accountListURL is the URL of the list at path of acc after cursor.
func accountListURL(path, acc, cursor string) string {
	return withQuery(path, url.Values{"account_id": {acc}, "cursor": {cursor}})
}

// pageLinks are a list page's links (the "pages" template): Next is the
// URL of the next page ("" on the last), First that of the first page
// when this is a later one.
type pageLinks struct{ Next, First string }

// newPageLinks returns the links of the page read after cursor, whose
// list goes on after next ("": it does not); at(c) is the list's URL
// after c.
func newPageLinks(cursor, next string, at func(c string) string) pageLinks {
	var l pageLinks
	if next != "" {
		l.Next = at(next)
	}
	if cursor != "" {
		l.First = at("")
	}
	return l
}
