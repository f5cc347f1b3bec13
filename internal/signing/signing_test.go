package signing_test

import (
	"testing"
	"time"

	"github.com/herald-events/herald/internal/signing"
)

// raceBuild is set under the race detector (race_test.go), whose
// instrumentation allocates: allocation budgets hold without it only.
var raceBuild bool

// The Standard Webhooks specification's example: this secret, id,
// timestamp and body sign to this v1 signature.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesTheSpecificationsExample(t *testing.T) {
	key, err := signing.ParseSecret(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	s := signing.NewSigner(signing.Keyring{Algorithm: signing.HMACSHA256, Keys: []signing.Key{{Key: key}}})
	if got := s.Sign(specID, specTimestamp, []byte(specBody), time.Unix(specTimestamp, 0)); got != specSignature {
		t.Fatalf("Sign = %q, want the specification's %q", got, specSignature)
	}
	v, err := signing.NewSecretVerifier(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(specID, "1614265330", []byte(specBody), specSignature); err != nil {
		t.Fatalf("Verify of the specification's example: %v", err)
	}
	for what, body := range map[string]string{"a changed body": `{"test": 2432232315}`, "an empty body": ""} {
		if err := v.Verify(specID, "1614265330", []byte(body), specSignature); err == nil {
			t.Errorf("Verify accepted %s", what)
		}
	}
	if err := v.Verify("msg_other", "1614265330", []byte(specBody), specSignature); err == nil {
		t.Error("Verify accepted another id")
	}
}

// TestRotationSignsWithEveryLiveKey: a rotated key keeps signing until it
// expires; the current key comes first.
func TestRotationSignsWithEveryLiveKey(t *testing.T) {
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	oldKey, err := signing.ParseSecret(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	next, err := signing.New(signing.HMACSHA256)
	if err != nil {
		t.Fatal(err)
	}
	sg := signing.Rotate(signing.Keyring{Algorithm: signing.HMACSHA256, Keys: []signing.Key{{Key: oldKey}}}, next, now, time.Hour)
	s := signing.NewSigner(sg)
	oldV, _ := signing.NewSecretVerifier(specSecret)
	newV, _ := signing.NewSecretVerifier(signing.Secret(next.Key))
	for _, at := range []time.Time{now, now.Add(time.Hour - time.Millisecond)} {
		h := s.Sign(specID, specTimestamp, []byte(specBody), at)
		if oldV.Verify(specID, "1614265330", []byte(specBody), h) != nil || newV.Verify(specID, "1614265330", []byte(specBody), h) != nil {
			t.Fatalf("at %v, within the grace, %q must verify with both keys", at, h)
		}
	}
	h := s.Sign(specID, specTimestamp, []byte(specBody), now.Add(time.Hour))
	if oldV.Verify(specID, "1614265330", []byte(specBody), h) == nil || newV.Verify(specID, "1614265330", []byte(specBody), h) != nil {
		t.Fatalf("after the grace %q must verify with the new key only", h)
	}
}

// TestSignAllocatesOnlyItsValue: an HMAC signature, with one key or two
// during a rotation, allocates only the header value it returns (the HMAC
// and the content's scratch bytes are reused).
func TestSignAllocatesOnlyItsValue(t *testing.T) {
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	key, err := signing.ParseSecret(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	next, err := signing.New(signing.HMACSHA256)
	if err != nil {
		t.Fatal(err)
	}
	one := signing.NewSigner(signing.Keyring{Algorithm: signing.HMACSHA256, Keys: []signing.Key{{Key: key}}})
	two := signing.NewSigner(signing.Rotate(signing.Keyring{Algorithm: signing.HMACSHA256, Keys: []signing.Key{{Key: key}}}, next, now, time.Hour))
	body := []byte(specBody)
	for name, s := range map[string]*signing.Signer{"one key": one, "two keys": two} {
		s.Sign(specID, specTimestamp, body, now) // fills the pool
		if n := testing.AllocsPerRun(100, func() { s.Sign(specID, specTimestamp, body, now) }); n > 1 && !raceBuild {
			t.Errorf("%s: Sign allocates %v times, want 1", name, n)
		}
	}
}
