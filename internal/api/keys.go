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

type keyInput struct {
	AccountID *string `json:"account_id"`
	Role      *string `json:"role"`
	Name      *string `json:"name"`
}

// createKey makes a key. An admin key makes keys of any role in any
// account (account_id, default the request's account); an account key
// makes account and publish keys of its own account only (403 otherwise).
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var in keyInput
	if !decodeBody(w, r, &in) {
		return
	}
	c := callerOf(r)
	accountID := c.Account
	if in.AccountID != nil {
		if *in.AccountID == "" {
			invalid(w, "account_id", "must name an account; leave it out for the request's account")
			return
		}
		accountID = *in.AccountID
	}
	if in.Role == nil {
		invalid(w, "role", "role is required: admin, account or publish")
		return
	}
	if !account.ValidRole(*in.Role) {
		invalid(w, "role", "must be admin, account or publish, not "+strconv.Quote(*in.Role))
		return
	}
	name := ""
	if in.Name != nil {
		if err := checkText("name", *in.Name, maxNameLen, false); err != nil {
			invalid(w, err.Field, err.Detail)
			return
		}
		name = *in.Name
	}
	if c.Role != account.RoleAdmin {
		if accountID != c.AccountID {
			forbidden(w, "an account key makes keys of its own account ("+c.AccountID+") only")
			return
		}
		if *in.Role == account.RoleAdmin {
			forbidden(w, "an account key makes account and publish keys only")
			return
		}
	}
	if *in.Role == account.RoleAdmin && accountID != account.DefaultID {
		invalid(w, "role", "admin keys act in every account and belong to "+account.DefaultID+"; leave account_id out")
		return
	}
	secret, k := auth.NewKey(accountID, *in.Role, name, s.Clock.Now().UTC().Truncate(time.Millisecond))
	if err := s.Store.CreateKey(r.Context(), k); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Field: "account_id",
				Detail: "account " + strconv.Quote(accountID) + " not found"})
			return
		}
		s.storeError(w, r, err, "API key")
		return
	}
	s.flushAuth()
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
	if err := s.Store.DeleteKey(r.Context(), k.ID); err != nil {
		s.storeError(w, r, err, "API key")
		return
	}
	s.flushAuth()
	w.WriteHeader(http.StatusNoContent)
}
