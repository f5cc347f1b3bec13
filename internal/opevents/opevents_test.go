package opevents_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/opevents"
	"github.com/herald-events/herald/internal/subscription"
)

// TestStopPublishesWhatIsQueued: events queued while the publisher is busy
// are published before Stop returns, in one batch per account.
func TestStopPublishesWhatIsQueued(t *testing.T) {
	var mu sync.Mutex
	var got [][]string // subjects, per publish
	busy, release := make(chan struct{}), make(chan struct{})
	p := opevents.New(func(ctx context.Context, account string, evs []event.Event) error {
		mu.Lock()
		var subjects []string
		for _, ev := range evs {
			subjects = append(subjects, account+"/"+ev.Subject)
		}
		got = append(got, subjects)
		first := len(got) == 1
		mu.Unlock()
		if first {
			close(busy)
			<-release
		}
		return nil
	}, clock.NewFake(time.Unix(0, 0)), slog.New(slog.DiscardHandler), nil)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-p.Started()
	p.SubscriptionReactivated(subscription.Subscription{ID: "sub_1", AccountID: "acc_a"}, 0)
	<-busy // sub_1's publish is in progress
	p.SubscriptionReactivated(subscription.Subscription{ID: "sub_2", AccountID: "acc_a"}, 0)
	p.SubscriptionReactivated(subscription.Subscription{ID: "sub_3", AccountID: "acc_a"}, 0)
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	close(release)
	<-stopped
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || len(got[0]) != 1 || got[0][0] != "acc_a/sub_1" || len(got[1]) != 2 || got[1][0] != "acc_a/sub_2" || got[1][1] != "acc_a/sub_3" {
		t.Fatalf("published %v; want [[acc_a/sub_1] [acc_a/sub_2 acc_a/sub_3]]", got)
	}
	select {
	case <-p.Stopped():
	default:
		t.Fatal("Stopped not closed after Stop")
	}
}
