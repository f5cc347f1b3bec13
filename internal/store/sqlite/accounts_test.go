package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/store/driver"
)

// TestAccountListPlans: every page of the account and key lists is a seek
// of its index, in the index's order (no sort).
func TestAccountListPlans(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "herald.db"))
	for q, want := range map[driver.Query]string{
		"ListAccounts":     "SEARCH accounts USING INDEX accounts_list (<expr>>?)",
		"ListAccountSizes": "SEARCH accounts USING INDEX accounts_list (<expr>>?)",
		"ListKeys":         "SEARCH api_keys USING INDEX api_keys_account (account_id=? AND id>?)",
		"ListKeySizes":     "SEARCH api_keys USING INDEX api_keys_account (account_id=? AND id>?)",
	} {
		p := plan(t, s, queries[q])
		if !strings.Contains(p, want) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want %q and no sort", q, p, want)
		}
	}
}
