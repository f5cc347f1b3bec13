package client

import (
	"fmt"
	"net/url"
	"strings"
)

// operation is one /v1 operation of the API (internal/api/openapi.yaml):
// its method, its path with {id} for the path parameter, whether it takes
// the account_id query parameter, and whether it is public (no key).
type operation struct {
	method, path string
	account      bool
	public       bool
}

// expand returns the operation's path with each {…} replaced by the next
// of ids, path-escaped; an empty id is an error (it would name another
// route).
func (o operation) expand(ids []string) (string, error) {
	out := o.path
	for _, id := range ids {
		i := strings.Index(out, "{")
		j := strings.Index(out, "}")
		if i < 0 || j < i {
			return "", fmt.Errorf("client: %s %s takes %d ids, got %d", o.method, o.path, strings.Count(o.path, "{"), len(ids))
		}
		if id == "" {
			return "", fmt.Errorf("client: %s %s: the %s is empty", o.method, o.path, out[i+1:j])
		}
		out = out[:i] + url.PathEscape(id) + out[j+1:]
	}
	if strings.Contains(out, "{") {
		return "", fmt.Errorf("client: %s %s takes %d ids, got %d", o.method, o.path, strings.Count(o.path, "{"), len(ids))
	}
	return out, nil
}

// acct is an operation acting in the key's account (it takes account_id).
func acct(method, path string) operation { return operation{method: method, path: path, account: true} }

// admin is an operation of /v1/accounts or /v1/event-types (no
// account_id).
func admin(method, path string) operation { return operation{method: method, path: path} }

// The operations, one per method of the services; operations lists them
// all for the test that holds them to openapi.yaml.
var (
	opCreateAccount = admin("POST", "/v1/accounts")
	opListAccounts  = admin("GET", "/v1/accounts")
	opGetAccount    = admin("GET", "/v1/accounts/{id}")
	opUpdateAccount = admin("PATCH", "/v1/accounts/{id}")
	opDeleteAccount = admin("DELETE", "/v1/accounts/{id}")

	opCreateKey = acct("POST", "/v1/keys")
	opListKeys  = acct("GET", "/v1/keys")
	opDeleteKey = acct("DELETE", "/v1/keys/{id}")

	opCreateSubscription  = acct("POST", "/v1/subscriptions")
	opListSubscriptions   = acct("GET", "/v1/subscriptions")
	opGetSubscription     = acct("GET", "/v1/subscriptions/{id}")
	opUpdateSubscription  = acct("PATCH", "/v1/subscriptions/{id}")
	opDeleteSubscription  = acct("DELETE", "/v1/subscriptions/{id}")
	opGetSecret           = acct("GET", "/v1/subscriptions/{id}/secret")
	opRotateSecret        = acct("POST", "/v1/subscriptions/{id}/secret/rotate")
	opReactivate          = acct("POST", "/v1/subscriptions/{id}/reactivate")
	opDeactivate          = acct("POST", "/v1/subscriptions/{id}/deactivate")
	opRecover             = acct("POST", "/v1/subscriptions/{id}/recover")
	opTestEvent           = acct("POST", "/v1/subscriptions/{id}/test")
	opFilterTest          = acct("POST", "/v1/subscriptions/{id}/filter-test")
	opFilterTestUnsaved   = acct("POST", "/v1/filter-test")
	opReceive             = acct("POST", "/v1/subscriptions/{id}/receive")
	opAcknowledge         = acct("POST", "/v1/subscriptions/{id}/acknowledge")
	opRelease             = acct("POST", "/v1/subscriptions/{id}/release")
	opReject              = acct("POST", "/v1/subscriptions/{id}/reject")
	opRenewLock           = acct("POST", "/v1/subscriptions/{id}/renew-lock")
	opGetJob              = acct("GET", "/v1/jobs/{id}")
	opCreatePortalSession = acct("POST", "/v1/portal-sessions")
	opPublish             = acct("POST", "/v1/events")
	opListDeliveries      = acct("GET", "/v1/deliveries")
	opGetDelivery         = acct("GET", "/v1/deliveries/{id}")
	opListAttempts        = acct("GET", "/v1/deliveries/{id}/attempts")
	opRedeliver           = acct("POST", "/v1/deliveries/{id}/redeliver")
	opListDeadLetters     = acct("GET", "/v1/dead-letters")
	opRedrive             = acct("POST", "/v1/dead-letters/redrive")
	opListEndpoints       = acct("GET", "/v1/endpoints")
	opGetEndpoint         = acct("GET", "/v1/endpoints/{id}")
	opUpdateEndpoint      = acct("PATCH", "/v1/endpoints/{id}")
	opEnableEndpoint      = acct("POST", "/v1/endpoints/{id}/enable")
	opFreezeEndpoint      = acct("POST", "/v1/endpoints/{id}/freeze")
	opGetStats            = acct("GET", "/v1/stats")
	opCreateEventType     = admin("POST", "/v1/event-types")
	opListEventTypes      = admin("GET", "/v1/event-types")
	opGetAsyncAPI         = admin("GET", "/v1/event-types/asyncapi.json")
	opGetEventType        = admin("GET", "/v1/event-types/{name}")
	opUpdateEventType     = admin("PATCH", "/v1/event-types/{name}")
	opArchiveEventType    = admin("DELETE", "/v1/event-types/{name}")
	opCreateSource        = admin("POST", "/v1/sources")
	opListSources         = admin("GET", "/v1/sources")
	opGetSource           = admin("GET", "/v1/sources/{id}")
	opUpdateSource        = admin("PATCH", "/v1/sources/{id}")
	opDeleteSource        = admin("DELETE", "/v1/sources/{id}")
	opPauseSource         = admin("POST", "/v1/sources/{id}/pause")
	opResumeSource        = admin("POST", "/v1/sources/{id}/resume")
	opListSourceDLs       = admin("GET", "/v1/sources/{id}/dead-letters")
	opConfirmValidation   = operation{method: "GET", path: "/v1/validation/{id}", public: true}
)
