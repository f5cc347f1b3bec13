package store

import (
	"context"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/job"
	"github.com/herald-events/herald/internal/subscription"
)

// ReadStore is what the API (api.Store) and the console (console.Store)
// both read of the Store to show it: accounts and keys, subscriptions and
// jobs, deliveries with their attempts and dead letters, endpoints and
// the rollups. Each embeds it and adds what it alone reads. It is declared
// here, beside the Store whose methods it names, because both packages
// use it and neither imports the other. The methods' contracts are those
// of the Store interfaces that declare them.
type ReadStore interface {
	GetAccount(ctx context.Context, id string) (account.Account, error)
	ListAccounts(ctx context.Context, p Page) ([]account.Account, string, error)
	GetKey(ctx context.Context, id string) (account.Key, error)
	ListKeys(ctx context.Context, accountID string, p Page) ([]account.Key, string, error)
	GetSubscription(ctx context.Context, id string) (subscription.Subscription, error)
	ListSubscriptions(ctx context.Context, accountID string, p Page) ([]subscription.Subscription, string, error)
	GetJob(ctx context.Context, id string) (job.Job, error)
	GetDelivery(ctx context.Context, id string) (delivery.Delivery, error)
	ListDeliveries(ctx context.Context, f DeliveryFilter) ([]delivery.Delivery, string, error)
	ListAttempts(ctx context.Context, deliveryID string, p Page) ([]delivery.Attempt, string, error)
	ListDeadLetters(ctx context.Context, f DeadLetterFilter) ([]DeadLetter, string, error)
	GetEndpoint(ctx context.Context, id string) (endpoint.Endpoint, error)
	ListEndpoints(ctx context.Context, accountID string, state health.State, p Page) ([]endpoint.Endpoint, string, error)
	StatsReader
}

var _ ReadStore = Store(nil)
