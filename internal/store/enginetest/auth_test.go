package enginetest

import "testing"

// RunAuthContract checks what authentication asks of the store (auth.Store,
// in internal/auth: KeyByHash, GetAccount, AuthVersion) and the first admin
// key the server makes at its first start (CreateFirstKey, in
// internal/server/bootstrap.go): every account and key write advances the
// auth version, and one first key is made whatever the races.
func RunAuthContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Keys", []test{
			{"AuthVersion", testAuthVersion},
			{"FirstKeyOnce", testFirstKey},
			{"FirstKeyRace", testFirstKeyRace},
		}},
	})
}
