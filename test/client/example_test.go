package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"time"

	"github.com/herald-events/herald/client"
	"github.com/herald-events/herald/internal/server"
)

// exampleKey is the admin key of the example's server.
const exampleKey = "example-admin-key-0123456789"

// startExampleServer starts a Herald server on a temporary data directory
// (as `herald serve` with HERALD_ADMIN_KEY=exampleKey would) and returns
// its URL and how to stop it.
func startExampleServer() (string, func()) {
	dir, err := os.MkdirTemp("", "herald-client-example")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(context.Background(), server.Config{DataDir: dir, Version: "example", AdminKey: exampleKey})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	api := httptest.NewServer(srv.Handler())
	return api.URL, func() {
		srv.StopWaiting()
		api.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		_ = os.RemoveAll(dir)
	}
}

// A pull subscription, an event published to it, received and
// acknowledged, and the problem of a name already taken.
func Example() {
	base, stop := startExampleServer()
	defer stop()
	ctx := context.Background()

	c, err := client.New(base, client.WithKey(exampleKey), client.WithTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	sub, err := c.Subscriptions.Create(ctx, client.SubscriptionInput{
		Name: "orders", DeliveryMode: "pull", EventTypes: []string{"order.created"},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Events.Publish(ctx, client.Event{
		ID: "o-1", Source: "/shop", Type: "order.created", Data: json.RawMessage(`{"total":12}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("published", res.Events[0].ID, "deliveries:", res.Events[0].Deliveries)

	got, err := c.Subscriptions.Receive(ctx, sub.ID, client.ReceiveParams{MaxEvents: 10})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range got.Data {
		fmt.Println("received", d.Event.Type, string(d.Event.Data))
		ack, err := c.Subscriptions.Acknowledge(ctx, sub.ID, []string{d.LockToken})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("acknowledged:", len(ack.Succeeded))
	}

	// A second subscription of the same name is refused, naming the field.
	_, err = c.Subscriptions.Create(ctx, client.SubscriptionInput{Name: "orders", DeliveryMode: "pull"})
	var p *client.Problem
	if errors.As(err, &p) {
		fmt.Println("problem:", p.Status, p.Field)
	}
	// Output:
	// published o-1 deliveries: 1
	// received order.created {"total":12}
	// acknowledged: 1
	// problem: 409 name
}
