package api

import (
	"cmp"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// accountJSON is the account resource.
type accountJSON struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Settings  accountSettings `json:"settings"`
	CreatedAt Time            `json:"created_at"`
	UpdatedAt Time            `json:"updated_at"`
}

type accountSettings struct {
	FailurePolicy        string   `json:"failure_policy"`
	PortalEventTypes     []string `json:"portal_event_types"`
	PortalFrameAncestors []string `json:"portal_frame_ancestors"`
	SchemaValidation     string   `json:"schema_validation"`
	CatalogOnly          bool     `json:"catalog_only"`
}

func toAccountJSON(a account.Account) accountJSON {
	fp := cmp.Or(a.Settings.FailurePolicy, subscription.FailureRetry)
	return accountJSON{ID: a.ID, Name: a.Name, Settings: accountSettings{FailurePolicy: fp,
		PortalEventTypes: orNone(a.Settings.PortalEventTypes), PortalFrameAncestors: orNone(a.Settings.PortalFrameAncestors),
		SchemaValidation: a.Settings.Validation(), CatalogOnly: a.Settings.CatalogOnly},
		CreatedAt: timestamp(a.CreatedAt), UpdatedAt: timestamp(a.UpdatedAt)}
}

func (s *Server) createAccount(w http.ResponseWriter, r *http.Request) {
	var in account.Input
	if !decodeBody(w, r, &in) {
		return
	}
	now := s.Clock.Now().UTC().Truncate(time.Millisecond)
	a, ierr := in.New(ids.New("acc_", now), now)
	if ierr != nil {
		invalid(w, ierr.Field, ierr.Detail)
		return
	}
	if err := s.Accounts.CreateAccount(r.Context(), a); err != nil {
		s.accountError(w, r, err, a.Name)
		return
	}
	w.Header().Set("Location", "/v1/accounts/"+a.ID)
	writeJSON(w, http.StatusCreated, toAccountJSON(a))
}

func (s *Server) listAccounts(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	accs, next, err := s.Store.ListAccounts(r.Context(), p)
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	writeList(w, accs, next, toAccountJSON)
}

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) {
	a, err := s.Store.GetAccount(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	writeJSON(w, http.StatusOK, toAccountJSON(a))
}

func (s *Server) updateAccount(w http.ResponseWriter, r *http.Request) {
	var in account.Input
	if !decodeBody(w, r, &in) {
		return
	}
	var name string
	a, err := s.Accounts.UpdateAccount(r.Context(), r.PathValue("id"), func(a *account.Account) error {
		if err := in.Apply(a); err != nil {
			return err
		}
		name = a.Name
		return nil
	})
	var ie *strictjson.Error
	switch {
	case errors.As(err, &ie):
		invalid(w, ie.Field, ie.Detail)
	case err != nil:
		s.accountError(w, r, err, name)
	default:
		writeJSON(w, http.StatusOK, toAccountJSON(a))
	}
}

// deleteAccount removes an account and revokes its keys. It refuses (409)
// acc_default and an account that still has subscriptions, or a broker
// source that publishes into it (which would go on publishing into an
// account that is gone): deleting those
// first is deliberate, where a cascade would be one mistyped ID away from
// ending a tenant's deliveries.
func (s *Server) deleteAccount(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := s.Accounts.DeleteAccount(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrConflict) && id == account.DefaultID:
		conflict(w, "", "the default account cannot be deleted")
	case errors.Is(err, store.ErrConflict):
		conflict(w, "", "the account still has subscriptions, or sources that publish into it (GET /v1/sources); delete them first")
	case err != nil:
		s.storeError(w, r, err, "account")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// accountError answers for a failed account write: 409 naming the field for
// a name in use, else as storeError does.
func (s *Server) accountError(w http.ResponseWriter, r *http.Request, err error, name string) {
	if errors.Is(err, store.ErrNameTaken) {
		conflict(w, "name", "an account named "+strconv.Quote(name)+" already exists")
		return
	}
	s.storeError(w, r, err, "account")
}

// orNone is ts, or [] for nil: a list the resource always shows.
func orNone(ts []string) []string {
	if ts == nil {
		return []string{}
	}
	return ts
}
