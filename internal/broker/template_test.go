package broker

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	long := strings.Repeat("a", MaxTarget+1)
	for _, c := range []struct {
		typ, s string
		ok     bool
	}{
		{TypeNATS, "orders.created", true},
		{TypeNATS, "orders.*", false},
		{TypeNATS, "orders.>", false},
		{TypeNATS, "orders..created", false},
		{TypeNATS, "orders.", false},
		{TypeNATS, "", false},
		{TypeNATS, "a b", false},
		{TypeNATS, long, false},
		{TypeAMQP, "", true},
		{TypeAMQP, "orders.created", true},
		{TypeAMQP, "orders.#", false},
		{TypeAMQP, "orders.*", false},
		{TypeAMQP, ".orders", false},
		{TypeMQTT, "orders/created", true},
		{TypeMQTT, "orders/+", false},
		{TypeMQTT, "orders/#", false},
		{TypeMQTT, "orders//created", false},
		{TypeMQTT, "/orders", false},
		{TypeKafka, "orders.created-v1_x", true},
		{TypeKafka, "orders/created", false},
		{TypeKafka, "..", false},
		{TypeKafka, strings.Repeat("a", 250), false},
		{TypeKafka, "", false},
	} {
		if msg := Check(c.typ, c.s); (msg == "") != c.ok {
			t.Errorf("Check(%s, %q) = %q, want ok %v", c.typ, c.s, msg, c.ok)
		}
	}
}

// TestResolve: placeholders take the event's type, subject and source,
// once (a value holding a placeholder is not expanded again); a result
// that fails the check is a refused publish naming the template and the
// result.
func TestResolve(t *testing.T) {
	f := Fields{Type: "order.created", Subject: "{type}", Source: "shop"}
	got, err := Resolve(TypeNATS, "events.{source}.{type}", f)
	if err != nil || got != "events.shop.order.created" {
		t.Fatalf("Resolve = %q, %v", got, err)
	}
	if got, err := Resolve(TypeNATS, "events.{subject}", f); err != nil || got != "events.{type}" {
		t.Fatalf("a subject holding a placeholder: %q, %v", got, err)
	}
	_, err = Resolve(TypeNATS, "events.{subject}.x", Fields{Subject: "a.*"})
	if OutcomeOf(err) != OutcomeRefused || !strings.Contains(err.Error(), `"events.{subject}.x" resolves to "events.a.*.x"`) {
		t.Fatalf("a wildcard: %v", err)
	}
	_, err = Resolve(TypeMQTT, "events/{subject}", Fields{})
	if OutcomeOf(err) != OutcomeRefused || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("an empty subject: %v", err)
	}
}

func TestCheckTemplate(t *testing.T) {
	for _, c := range []struct {
		typ, tmpl string
		ok        bool
	}{
		{TypeNATS, "events.{type}", true},
		{TypeNATS, "events.{subject}.{source}", true},
		{TypeNATS, "events.{tenant}", false},
		{TypeNATS, "events.{type", false},
		{TypeNATS, "events.*", false},
		{TypeKafka, "{type}", true},
		{TypeMQTT, "a/{type}/#", false},
	} {
		if msg := CheckTemplate(c.typ, c.tmpl); (msg == "") != c.ok {
			t.Errorf("CheckTemplate(%s, %q) = %q, want ok %v", c.typ, c.tmpl, msg, c.ok)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	cause := errors.New("x")
	if OutcomeOf(Refused(cause)) != OutcomeRefused || OutcomeOf(TimedOut(cause)) != OutcomeTimeout || OutcomeOf(cause) != OutcomeUnreachable {
		t.Fatal("outcomes")
	}
	// The first classification stays.
	if OutcomeOf(TimedOut(Unreachable(cause))) != OutcomeUnreachable {
		t.Fatal("reclassified")
	}
	if !errors.Is(Refused(cause), cause) {
		t.Fatal("the cause is lost")
	}
}

// TestResolveReserved: a reserved prefix (Reserved) or an empty routing
// key that the event's attributes give is refused; the template's own
// text may hold one.
func TestResolveReserved(t *testing.T) {
	for _, c := range []struct {
		typ, tmpl, typeAttr string
		ok                  bool
	}{
		{TypeNATS, "{type}", "$JS.API.STREAM.DELETE.X", false},
		{TypeNATS, "{type}", "_INBOX.x", false},
		{TypeNATS, "$KV.b.{type}", "k", true},
		{TypeMQTT, "{type}", "$SYS/x", false},
		{TypeMQTT, "{type}", "a\u0085b", false},
		{TypeMQTT, "{type}", "a\U0010fffeb", false},
		{TypeAMQP, "{type}", "amq.gen-x", false},
		{TypeAMQP, "{type}", "", false},
		{TypeAMQP, "", "", true},
		{TypeKafka, "{type}", "__consumer_offsets", false},
		{TypeKafka, "_{type}", "_x", false},
		{TypeKafka, "__mine.{type}", "x", true},
	} {
		_, err := Resolve(c.typ, c.tmpl, Fields{Type: c.typeAttr})
		if (err == nil) != c.ok || err != nil && !InvalidTarget(err) {
			t.Errorf("Resolve(%s, %q) for type %q: %v, want ok %v", c.typ, c.tmpl, c.typeAttr, err, c.ok)
		}
	}
}
