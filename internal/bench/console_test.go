package bench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConsoleRegistered(t *testing.T) {
	if !slices.Contains(Scenarios, "console") || scenarioFuncs["console"] == nil || !strings.Contains(ScenarioHelp(), "--console-deliveries") {
		t.Error("console is not listed, registered or described")
	}
	if got, err := ParseScenarios("console"); err != nil || len(got) != 1 {
		t.Errorf("console by name: %v, %v", got, err)
	}
	s := DefaultSizes()
	if s.ConsoleDeliveries != 1_000_000 {
		t.Errorf("console's default size: %d", s.ConsoleDeliveries)
	}
	// At least 2,000 deliveries/s at worst to fill.
	if d := defaultTimeout("console", s); d < 1_000_000/2000*time.Second {
		t.Errorf("console's deadline %v", d)
	}
	s.ConsoleDeliveries = 0
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "--console-deliveries") {
		t.Errorf("--console-deliveries 0: %v", err)
	}
}
