//go:build race

package signing_test

func init() { raceBuild = true }
