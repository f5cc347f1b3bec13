package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/store"
)

// keyJSON is the API key resource. Key, the secret, is set only in the
// answer to its creation: Herald keeps only its hash.
type keyJSON struct {
	ID        string `json:"id"`
	Key       string `json:"key,omitempty"`
	AccountID string `json:"account_id"`
	Role      string `json:"role"`
	Name      string `json:"name"`
	Prefix    string `json:"prefix"`
	CreatedAt Time   `json:"created_at"`
}

func toKeyJSON(k account.Key) keyJSON {
	return keyJSON{ID: k.ID, AccountID: k.AccountID, Role: k.Role, Name: k.Name, Prefix: k.Prefix, CreatedAt: timestamp(k.CreatedAt)}
}

// createKey makes a key. An admin key makes keys of any role in any
// account (account_id, default the request's account); an account key
// makes account and publish keys of its own account only (403 otherwise).
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var in account.KeyInput
	if !decodeBody(w, r, &in) {
		return
	}
	c := callerOf(r)
	spec, ierr := in.Spec(c.Account)
	if ierr != nil {
		invalid(w, ierr.Field, ierr.Detail)
		return
	}
	if c.Role != account.RoleAdmin {
		if spec.AccountID != c.AccountID {
			forbidden(w, "an account key makes keys of its own account ("+c.AccountID+") only")
			return
		}
		if spec.Role == account.RoleAdmin {
			forbidden(w, "an account key makes account and publish keys only")
			return
		}
	}
	if ierr := spec.Check(); ierr != nil {
		invalid(w, ierr.Field, ierr.Detail)
		return
	}
	secret, k := auth.NewKey(spec.AccountID, spec.Role, spec.Name, s.Clock.Now().UTC().Truncate(time.Millisecond))
	if err := s.Accounts.CreateKey(r.Context(), k); err != nil {
		if errors.Is(err, store.ErrNotFound) && !accountIDs.fits(spec.AccountID) {
			notFoundID(w, "account_id", &accountIDs, spec.AccountID)
			return
		}
		if errors.Is(err, store.ErrNotFound) {
			writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Field: "account_id",
				Detail: "account " + strconv.Quote(spec.AccountID) + " not found"})
			return
		}
		s.storeError(w, r, err, "API key")
		return
	}
	out := toKeyJSON(k)
	out.Key = secret
	w.Header().Set("Location", "/v1/keys/"+k.ID)
	writeJSON(w, http.StatusCreated, out)
}

// listKeys lists the keys of the request's account, without their secrets.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	p, ok := page(w, r)
	if !ok {
		return
	}
	keys, next, err := s.Store.ListKeys(r.Context(), accountOf(r), p)
	if err != nil {
		s.storeError(w, r, err, "API key")
		return
	}
	writeList(w, keys, next, toKeyJSON)
}

// deleteKey revokes a key of the request's account: on this node at once,
// on the others within the authenticator's recheck interval.
func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.Store.GetKey(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "API key")
		return
	}
	c := callerOf(r)
	// An admin revokes any key; others only their account's.
	if c.Role != account.RoleAdmin && !ownedBy(w, r, k.AccountID, "API key") {
		return
	}
	if err := s.Accounts.DeleteKey(r.Context(), k.ID); err != nil {
		s.storeError(w, r, err, "API key")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
