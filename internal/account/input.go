package account

import (
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// Input is an account create or update request, as the API decodes it
// (strictjson.Decode); absent fields are nil. Its checks return a
// *strictjson.Error naming the field at fault.
type Input struct {
	Name     *string        `json:"name"`
	Settings *SettingsInput `json:"settings"`
}

// SettingsInput is the settings member of an Input.
type SettingsInput struct {
	FailurePolicy *string `json:"failure_policy"`
	// PortalEventTypes and PortalFrameAncestors replace the settings of
	// those names ([] empties one; see portal.go).
	PortalEventTypes     *[]string `json:"portal_event_types"`
	PortalFrameAncestors *[]string `json:"portal_frame_ancestors"`
	// SchemaValidation and CatalogOnly set the catalog settings (see
	// schemas.go).
	SchemaValidation *string `json:"schema_validation"`
	CatalogOnly      *bool   `json:"catalog_only"`
}

// New checks in as a create request and returns the account it makes:
// named (a name is required), with the failure policy
// subscription.FailureRetry unless in says otherwise.
func (in Input) New(id string, now time.Time) (Account, *strictjson.Error) {
	if in.Name == nil {
		return Account{}, &strictjson.Error{Field: "name", Detail: "name is required"}
	}
	a := Account{ID: id, Settings: Settings{FailurePolicy: subscription.FailureRetry}, CreatedAt: now, UpdatedAt: now}
	if err := in.Apply(&a); err != nil {
		return Account{}, err
	}
	return a, nil
}

// Apply checks the fields in sets and writes them over a (which a problem
// may leave half changed).
func (in Input) Apply(a *Account) *strictjson.Error {
	if in.Name != nil {
		if err := strictjson.CheckText("name", *in.Name, subscription.MaxNameLen, true); err != nil {
			return err
		}
		a.Name = *in.Name
	}
	if in.Settings != nil && in.Settings.FailurePolicy != nil {
		switch fp := *in.Settings.FailurePolicy; fp {
		case subscription.FailureRetry, subscription.FailureQueue:
			a.Settings.FailurePolicy = fp
		default:
			return strictjson.Errorf("settings.failure_policy", "must be %q or %q, not %s",
				subscription.FailureRetry, subscription.FailureQueue, strconv.Quote(fp))
		}
	}
	if in.Settings != nil {
		if err := in.Settings.applySchemas(&a.Settings); err != nil {
			return err
		}
		return in.Settings.applyPortal(&a.Settings)
	}
	return nil
}

// KeyInput is an API key create request, as the API decodes it; absent
// fields are nil.
type KeyInput struct {
	AccountID *string `json:"account_id"`
	Role      *string `json:"role"`
	Name      *string `json:"name"`
}

// KeySpec is what a checked KeyInput asks for.
type KeySpec struct {
	AccountID, Role, Name string
}

// Spec checks in's fields and returns what it asks for: a key of its
// account_id (requestAccount, the account the request acts in, when it
// names none), of a valid role (required), with its name ("" when absent).
// Who may make such a key is the caller's to decide; then Check.
func (in KeyInput) Spec(requestAccount string) (KeySpec, *strictjson.Error) {
	k := KeySpec{AccountID: requestAccount}
	if in.AccountID != nil {
		if *in.AccountID == "" {
			return KeySpec{}, &strictjson.Error{Field: "account_id", Detail: "must name an account; leave it out for the request's account"}
		}
		k.AccountID = *in.AccountID
	}
	if in.Role == nil {
		return KeySpec{}, &strictjson.Error{Field: "role", Detail: "role is required: admin, account or publish"}
	}
	if !ValidRole(*in.Role) {
		return KeySpec{}, &strictjson.Error{Field: "role", Detail: "must be admin, account or publish, not " + strconv.Quote(*in.Role)}
	}
	k.Role = *in.Role
	if in.Name != nil {
		if err := strictjson.CheckText("name", *in.Name, subscription.MaxNameLen, false); err != nil {
			return KeySpec{}, err
		}
		k.Name = *in.Name
	}
	return k, nil
}

// Check refuses an admin key of another account than DefaultID: admin keys
// act in every account and belong to it.
func (k KeySpec) Check() *strictjson.Error {
	if k.Role == RoleAdmin && k.AccountID != DefaultID {
		return &strictjson.Error{Field: "role", Detail: "admin keys act in every account and belong to " + DefaultID + "; leave account_id out"}
	}
	return nil
}
