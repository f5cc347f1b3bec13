package source

import (
	"context"

	"github.com/herald-events/herald/internal/broker"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/subscription"
)

// CheckDestinations refuses connection settings a host of which g refuses
// (subscription.CheckSettingsHosts: a literal address the policy does not
// allow, a loopback or local network's name, a name that resolves now only
// to refused addresses), naming url or brokers[i]. The consumer's dials
// are checked again, each one (destination.Dialer).
func CheckDestinations(ctx context.Context, g destination.Guard, c broker.Settings) error {
	if err := subscription.CheckSettingsHosts(ctx, g, "", c); err != nil {
		return err
	}
	return nil
}
