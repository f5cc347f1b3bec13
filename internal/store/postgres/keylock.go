package postgres

// ClaimStep implements engine.ClaimHook: it calls the test's claimStep
// hook, if any, at step (engine.ClaimLeasedKeys, engine.ClaimKeysHeld).
func (d pgDriver) ClaimStep(step string) {
	if d.b.claimStep != nil {
		d.b.claimStep(step)
	}
}
