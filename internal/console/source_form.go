package console

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
)

// sourceForm is the source create and edit form's fields as typed, each
// input named as the API's field is (sasl.password, wrap.type), so that a
// problem's field names the input at fault. It never holds a password to
// show: a page shows URL masked (redact.URL) and the SASL password input
// always empty.
type sourceForm struct {
	Account, Name, Type string
	URL                 string
	// Brokers are host:port addresses separated by commas, spaces or
	// lines.
	Brokers string
	// TLS is the box that turns TLS on; ServerName and CAPEM its fields.
	TLS               bool
	ServerName, CAPEM string
	// The SASL fields; SASLPassword is what was typed ("" on edit: keep
	// the current one).
	SASLMechanism, SASLUsername, SASLPassword string
	Subject, Stream, Durable, Queue, Topic    string
	Format, WrapType, WrapSource              string
}

// readSourceForm returns the form's fields of a POST (parsed by change).
func readSourceForm(r *http.Request) sourceForm {
	f := r.PostForm
	t := strings.TrimSpace
	return sourceForm{Account: t(f.Get("account_id")), Name: f.Get("name"), Type: f.Get("type"), URL: t(f.Get("url")),
		Brokers: f.Get("brokers"), TLS: f.Get("tls") != "", ServerName: t(f.Get("tls.server_name")), CAPEM: t(f.Get("tls.ca_pem")),
		SASLMechanism: f.Get("sasl.mechanism"), SASLUsername: f.Get("sasl.username"), SASLPassword: f.Get("sasl.password"),
		Subject: t(f.Get("subject")), Stream: t(f.Get("stream")), Durable: t(f.Get("durable")), Queue: t(f.Get("queue")),
		Topic: t(f.Get("topic")), Format: f.Get("format"), WrapType: t(f.Get("wrap.type")), WrapSource: t(f.Get("wrap.source"))}
}

// sourceFormOf is the edit form of src: its settings as they are, the
// URL's secret masked and no SASL password.
func sourceFormOf(src source.Source) sourceForm {
	c := src.Config
	f := sourceForm{Account: src.AccountID, Name: src.Name, Type: src.Type, URL: redact.URL(c.Conn.URL),
		Brokers: strings.Join(c.Conn.Brokers, ", "), Subject: c.Subject, Stream: c.Stream, Durable: c.Durable, Queue: c.Queue,
		Topic: c.Topic, Format: c.Format}
	if t := c.Conn.TLS; t != nil {
		f.TLS, f.ServerName, f.CAPEM = true, t.ServerName, t.CAPEM
	}
	if s := c.Conn.SASL; s != nil {
		f.SASLMechanism, f.SASLUsername = s.Mechanism, s.Username
	}
	if w := c.Wrap; w != nil {
		f.WrapType, f.WrapSource = w.Type, w.Source
	}
	return f
}

// brokers returns the broker addresses typed.
func (f sourceForm) brokers() []string {
	return strings.FieldsFunc(f.Brokers, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' || r == '\n' })
}

// tls is the TLS the form sets: nil when the box is off and its fields
// empty.
func (f sourceForm) tls() *broker.TLS {
	if !f.TLS && f.ServerName == "" && f.CAPEM == "" {
		return nil
	}
	return &broker.TLS{ServerName: f.ServerName, CAPEM: f.CAPEM}
}

// sasl is the SASL the form sets: nil when its fields are empty.
func (f sourceForm) sasl() *broker.SASL {
	if f.SASLMechanism == "" && f.SASLUsername == "" && f.SASLPassword == "" {
		return nil
	}
	return &broker.SASL{Mechanism: f.SASLMechanism, Username: f.SASLUsername, Password: f.SASLPassword}
}

// wrap is the wrap the form sets: nil when its fields are empty.
func (f sourceForm) wrap() *source.Wrap {
	if f.WrapType == "" && f.WrapSource == "" {
		return nil
	}
	return &source.Wrap{Type: f.WrapType, Source: f.WrapSource}
}

// given returns a pointer to s, nil when s is empty (a field left out).
func given(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// createInput is the API's create request (POST /v1/sources) of the
// form: its empty fields left out.
func (f sourceForm) createInput() source.Input {
	in := source.Input{Name: given(f.Name), Type: given(f.Type), AccountID: given(f.Account), URL: given(f.URL), TLS: strictjson.Given(f.tls()),
		SASL: strictjson.Given(f.sasl()), Subject: given(f.Subject), Stream: given(f.Stream), Durable: given(f.Durable), Queue: given(f.Queue),
		Topic: given(f.Topic), Format: given(f.Format), Wrap: strictjson.Given(f.wrap())}
	if bs := f.brokers(); len(bs) > 0 {
		in.Brokers = &bs
	}
	return in
}

// updateInput is the API's change request (PATCH /v1/sources/{id}) of the
// form for cur: the fields that differ from cur's connection as shown
// (broker.Settings.Shown), so that those alone change, as PATCH keeps what
// it is not given. A URL left as shown (its secret masked) and an empty
// SASL password are sent as shown, and PATCH keeps the stored secret
// (broker.Settings.Restore). Emptying tls, sasl or wrap removes it. An
// Input of no field is a form that changes nothing.
func (f sourceForm) updateInput(cur source.Source) source.Input {
	c := cur.Config
	shown := c.Conn.Shown()
	var in source.Input
	for _, d := range []struct {
		dst       **string
		form, was string
	}{{&in.Name, f.Name, cur.Name}, {&in.URL, f.URL, shown.URL}, {&in.Subject, f.Subject, c.Subject},
		{&in.Stream, f.Stream, c.Stream}, {&in.Durable, f.Durable, c.Durable}, {&in.Queue, f.Queue, c.Queue},
		{&in.Topic, f.Topic, c.Topic}, {&in.Format, f.Format, c.Format}} {
		if d.form != d.was {
			*d.dst = &d.form
		}
	}
	if bs := f.brokers(); !slices.Equal(bs, c.Conn.Brokers) && len(bs)+len(c.Conn.Brokers) > 0 {
		in.Brokers = &bs
	}
	in.TLS = changed(f.tls(), c.Conn.TLS)
	s := f.sasl()
	if s != nil && s.Password == "" && shown.SASL != nil {
		s.Password = shown.SASL.Password // the stored one's mask: kept
	}
	in.SASL = changed(s, shown.SASL)
	in.Wrap = changed(f.wrap(), c.Wrap)
	return in
}

// changed is the change of a member the form sets to form where it was
// was: none when they are equal, else form (nil, emptied on the form:
// removed, as PATCH removes a member sent as null).
func changed[T comparable](form, was *T) strictjson.Optional[T] {
	if form == nil && was == nil || form != nil && was != nil && *form == *was {
		return strictjson.Optional[T]{}
	}
	return strictjson.Given(form)
}

// sourceFormView is the create or edit page.
type sourceFormView struct {
	// ID is the source edited ("" on create).
	ID   string
	Form sourceForm
	// Accounts are the admin's choices on create (the first
	// store.MaxLimit).
	Accounts []account.Account
	Types    []string
	// Mechanisms are the SASL mechanisms offered.
	Mechanisms []string
	Problem    formProblem
	// HasPassword: the source edited has a SASL password (kept when the
	// input is left empty).
	HasPassword bool
}

// ShownURL is the form's URL as the page shows it: its secret masked.
func (v sourceFormView) ShownURL() string { return redact.URL(v.Form.URL) }

// Err is what the form shows beside the input named field: the problem's
// detail when it names the field (or an item of it: brokers[1], with the
// item), "" otherwise.
func (v sourceFormView) Err(field string) string {
	p := v.Problem
	switch {
	case p.Detail == "":
		return ""
	case p.Field == field:
		return p.Detail
	case strings.HasPrefix(p.Field, field+"["):
		return p.Field + ": " + p.Detail
	}
	return ""
}

// sourceProblem returns the form's problem of a source write's error, as
// the API answers it (internal/api/sources.go's sourceError): 400 for a
// field's value, 422 for a broker the destination policy refuses, 409 for
// a name in use or the installation's limit; false for another error (the
// store's).
func sourceProblem(err error) (formProblem, bool) {
	switch {
	case errors.Is(err, store.ErrNameTaken):
		return formProblem{"name", "a source of this account has this name", http.StatusConflict}, true
	case errors.Is(err, store.ErrSourceLimit):
		return formProblem{"", "the installation holds " + strconv.Itoa(source.MaxSources) + " sources, the most it may hold",
			http.StatusConflict}, true
	}
	return problemOf(err, "")
}

// newForm shows the create form, for the account ?account_id= names (the
// default account without it).
func (sp *sourcePages) newForm(w http.ResponseWriter, r *http.Request, v *visit) {
	f := sourceForm{Account: account.OrDefault(r.URL.Query().Get("account_id")), Type: source.TypeNATS, Format: source.FormatCloudEvents}
	sp.showForm(w, r, v, http.StatusOK, sourceFormView{Form: f})
}

// showForm renders the create or edit form view with status.
func (sp *sourcePages) showForm(w http.ResponseWriter, r *http.Request, v *visit, status int, view sourceFormView) {
	title := "New source"
	if view.ID != "" {
		title = "Edit " + strings.TrimSpace(view.Form.Name+" "+view.ID)
	} else {
		var ok bool
		if view.Accounts, ok = sp.accountChoices(w, r, v); !ok {
			return
		}
	}
	view.Types, view.Mechanisms = source.Types, broker.SASLMechanisms
	sp.render(w, r, status, "source_form", v, title, view)
}

// create takes the create form: the source is made as the API's POST
// /v1/sources makes it (Sources.Create), and the browser goes to its
// page. A problem is shown on the form beside its field, with what was
// typed but the passwords, and nothing is made.
func (sp *sourcePages) create(w http.ResponseWriter, r *http.Request, v *visit) {
	f := readSourceForm(r)
	src, err := sp.sources.Create(r.Context(), f.createInput())
	if p, ok := sourceProblem(err); ok {
		f.SASLPassword = ""
		sp.showForm(w, r, v, p.status, sourceFormView{Form: f, Problem: p})
		return
	} else if err != nil {
		sp.storeError(w, r, v, err)
		return
	}
	redirect(w, r, "/console/sources/"+src.ID+"?done=created")
}

// editForm shows the edit form of the path's source.
func (sp *sourcePages) editForm(w http.ResponseWriter, r *http.Request, v *visit) {
	src, ok := sp.pathSource(w, r, v)
	if !ok {
		return
	}
	sp.showForm(w, r, v, http.StatusOK, sourceFormView{ID: src.ID, Form: sourceFormOf(src), HasPassword: src.Config.Conn.SASL != nil})
}

// edit takes the edit form: the fields that differ from the source's are
// changed as the API's PATCH /v1/sources/{id} changes them
// (Sources.Update), and the browser goes to its page, which says "Saved",
// or that nothing changed when the form held the source's settings (then
// nothing is written). A problem is shown on the form beside its field,
// and nothing changes.
func (sp *sourcePages) edit(w http.ResponseWriter, r *http.Request, v *visit) {
	src, ok := sp.pathSource(w, r, v)
	if !ok {
		return
	}
	f := readSourceForm(r)
	f.Type, f.Account = src.Type, src.AccountID // never change
	in := f.updateInput(src)
	var err error
	done := "unchanged"
	if in != (source.Input{}) {
		_, err = sp.sources.Update(r.Context(), src.ID, in)
		done = "saved"
	}
	if p, ok := sourceProblem(err); ok {
		f.SASLPassword = ""
		sp.showForm(w, r, v, p.status, sourceFormView{ID: src.ID, Form: f, Problem: p, HasPassword: src.Config.Conn.SASL != nil})
		return
	} else if sp.failed(w, r, v, "source", src.ID, err) {
		return
	}
	redirect(w, r, "/console/sources/"+src.ID+"?done="+done)
}
