package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
)

// Failure policies an account's settings name.
const (
	failureRetry = "retry"
	failureQueue = "queue"
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
	FailurePolicy string `json:"failure_policy"`
}

func toAccountJSON(a account.Account) accountJSON {
	fp := a.Settings.FailurePolicy
	if fp == "" {
		fp = failureRetry
	}
	return accountJSON{ID: a.ID, Name: a.Name, Settings: accountSettings{FailurePolicy: fp},
		CreatedAt: timestamp(a.CreatedAt), UpdatedAt: timestamp(a.UpdatedAt)}
}

// accountInput is a create or update request; absent fields are nil.
type accountInput struct {
	Name     *string `json:"name"`
	Settings *struct {
		FailurePolicy *string `json:"failure_policy"`
	} `json:"settings"`
}

// apply validates in and writes it over a.
func (in accountInput) apply(a *account.Account) *inputError {
	if in.Name != nil {
		if err := checkText("name", *in.Name, maxNameLen, true); err != nil {
			return err
		}
		a.Name = *in.Name
	}
	if in.Settings != nil && in.Settings.FailurePolicy != nil {
		switch fp := *in.Settings.FailurePolicy; fp {
		case failureRetry, failureQueue:
			a.Settings.FailurePolicy = fp
		default:
			return badInput("settings.failure_policy", "must be %q or %q, not %s", failureRetry, failureQueue, strconv.Quote(fp))
		}
	}
	return nil
}

func (s *Server) createAccount(w http.ResponseWriter, r *http.Request) {
	var in accountInput
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Name == nil {
		invalid(w, "name", "name is required")
		return
	}
	now := s.Clock.Now().UTC().Truncate(time.Millisecond)
	a := account.Account{ID: ids.New("acc_", now), Settings: account.Settings{FailurePolicy: failureRetry}, CreatedAt: now, UpdatedAt: now}
	if err := in.apply(&a); err != nil {
		invalid(w, err.Field, err.Detail)
		return
	}
	if err := s.Store.CreateAccount(r.Context(), a); err != nil {
		s.accountError(w, r, err, a.Name)
		return
	}
	s.flushAuth()
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
	var in accountInput
	if !decodeBody(w, r, &in) {
		return
	}
	a, err := s.Store.GetAccount(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	if err := in.apply(&a); err != nil {
		invalid(w, err.Field, err.Detail)
		return
	}
	a.UpdatedAt = s.Clock.Now().UTC().Truncate(time.Millisecond)
	if err := s.Store.UpdateAccount(r.Context(), a); err != nil {
		s.accountError(w, r, err, a.Name)
		return
	}
	s.flushAuth()
	writeJSON(w, http.StatusOK, toAccountJSON(a))
}

// deleteAccount removes an account and revokes its keys. It refuses (409)
// acc_default and an account that still has subscriptions: deleting those
// first is deliberate, where a cascade would be one mistyped ID away from
// ending a tenant's deliveries.
func (s *Server) deleteAccount(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := s.Store.DeleteAccount(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrConflict) && id == account.DefaultID:
		conflict(w, "", "the default account cannot be deleted")
	case errors.Is(err, store.ErrConflict):
		conflict(w, "", "the account still has subscriptions; delete them first")
	case err != nil:
		s.storeError(w, r, err, "account")
	default:
		s.flushAuth()
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
