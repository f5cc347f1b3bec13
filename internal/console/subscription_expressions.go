package console

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/herald-events/herald/internal/subscription"
)

// expressions are a subscription form's CEL fields as typed (the console's
// and the portal's forms): filter_expression and transform's cel, each
// trimmed ("": none), on one line or several. docs/subscriptions.md says what they do.
type expressions struct {
	FilterExpression, Transform string
}

// readExpressions returns the expressions of a form's POST, their line
// breaks LF (a browser sends a textarea's as CRLF), trimmed.
func readExpressions(f url.Values) expressions {
	read := func(name string) string { return strings.TrimSpace(strings.ReplaceAll(f.Get(name), "\r\n", "\n")) }
	return expressions{FilterExpression: read("filter_expression"), Transform: read("transform")}
}

// expressionsOf are sub's expressions, as its edit form shows them.
func expressionsOf(sub subscription.Subscription) expressions {
	return expressions{FilterExpression: sub.Filters.Expression, Transform: sub.Delivery.Transform}
}

// into sets in's filter_expression and transform to those typed where they
// differ from cur's (an empty field removes it; a field as it was asks for
// nothing, so that a pull subscription, which takes no transform, is
// refused only one typed), as the API's requests set them. cur is the
// zero value on create.
func (e expressions) into(in *subscription.Input, cur expressions) {
	if e.FilterExpression != strings.TrimSpace(cur.FilterExpression) {
		f := e.FilterExpression
		in.FilterExpression = &f
	}
	if e.Transform != strings.TrimSpace(cur.Transform) {
		in.Transform, _ = json.Marshal(map[string]string{"cel": e.Transform})
	}
}

// expressionsBlock is what the forms' expressions section
// (templates/partials/expressions.html) shows: the fields as typed, the
// problem that refused the form (beside its field when it is one of
// them), whether the transform is offered (not for a pull subscription's
// edit), and the preview panel with the path its Preview button posts
// the form to.
type expressionsBlock struct {
	expressions
	Problem     formProblem
	NoTransform bool
	Preview     previewPanel
	Action      string
}
