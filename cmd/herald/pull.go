package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/herald-events/herald/client"
)

const pullUsage = `Usage: herald pull [flags] SUBSCRIPTION

Receives the queued events of a pull subscription (or of a deactivated push
subscription) from a running Herald, prints each, and acknowledges them: a
consumer to try pull delivery with, as herald sink is for push. For each
event it prints one line, then the event indented:

  TIME delivery=ID count=N type=TYPE id=EVENT_ID

It waits up to --max-wait for events in each receive (a long poll), and runs
until SIGINT or SIGTERM, or until it has received --count events. With
--no-ack nothing is acknowledged: each lock expires after --lock-duration and
the events come back, their count up by one.

` + clientHelp + `
Flags:
`

// pullConfig is herald pull's behaviour, from its flags.
type pullConfig struct {
	Subscription          string
	MaxEvents, Count      int
	MaxWait, LockDuration time.Duration
	NoAck                 bool
}

func runPull(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, cfg, cf := newPullFlags(stderr)
	sub, code, ok := cf.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	cfg.Subscription = sub
	if err := cfg.check(); err != nil {
		fmt.Fprintf(stderr, "herald pull: %v\n", err)
		return 2
	}
	answer := &answerKeeper{next: http.DefaultTransport}
	c, err := cf.newClient(client.WithHTTPClient(&http.Client{Transport: answer}))
	if err != nil {
		fmt.Fprintf(stderr, "herald pull: %v\n", err)
		return 1
	}
	if err := pull(ctx, c, answer, *cfg, stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "herald pull: %v\n", err)
		return 1
	}
	return 0
}

// newPullFlags returns herald pull's flag set, writing errors to stderr,
// the configuration its flags set and its client flags.
func newPullFlags(stderr io.Writer) (*flag.FlagSet, *pullConfig, *clientFlags) {
	cfg := &pullConfig{}
	fs := flag.NewFlagSet("herald pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	fs.IntVar(&cfg.MaxEvents, "max-events", 10, "events a receive takes at most (1..1000; an answer also holds at most 4 MiB, and the next receive takes the rest)")
	fs.DurationVar(&cfg.MaxWait, "max-wait", 30*time.Second, "how long a receive waits for events (0s..60s)")
	fs.DurationVar(&cfg.LockDuration, "lock-duration", 60*time.Second, "how long a received event stays locked (10s..300s)")
	fs.IntVar(&cfg.Count, "count", 0, "stop after this many events (0: run until stopped)")
	fs.BoolVar(&cfg.NoAck, "no-ack", false, "print events without acknowledging them")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), pullUsage)
		fs.PrintDefaults()
	}
	return fs, cfg, cf
}

// check reports the first flag out of its range.
func (cfg *pullConfig) check() error {
	switch {
	case cfg.MaxEvents < 1 || cfg.MaxEvents > 1000:
		return fmt.Errorf("--max-events %d: must be from 1 to 1000", cfg.MaxEvents)
	case cfg.MaxWait < 0 || cfg.MaxWait > time.Minute:
		return fmt.Errorf("--max-wait %v: must be from 0s to 60s", cfg.MaxWait)
	case cfg.LockDuration < 10*time.Second || cfg.LockDuration > 300*time.Second:
		return fmt.Errorf("--lock-duration %v: must be from 10s to 300s", cfg.LockDuration)
	case cfg.Count < 0:
		return fmt.Errorf("--count %d: must be 0 or more", cfg.Count)
	}
	return nil
}

// pull receives, prints and acknowledges until ctx ends or cfg.Count
// events were received. Each receive may wait cfg.MaxWait on the server:
// the client's request timeout has that added (client.Receive). The
// events printed are those of the receive's answer as sent (answer keeps
// it).
func pull(ctx context.Context, c *client.Client, answer *answerKeeper, cfg pullConfig, stdout io.Writer) error {
	wait, lock := client.Duration(cfg.MaxWait), client.Duration(cfg.LockDuration)
	got := 0
	for cfg.Count == 0 || got < cfg.Count {
		max := cfg.MaxEvents
		if cfg.Count > 0 {
			max = min(max, cfg.Count-got)
		}
		res, err := c.Subscriptions.Receive(ctx, cfg.Subscription, client.ReceiveParams{MaxEvents: max, MaxWait: &wait, LockDuration: &lock})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("receive: %s", describeError(err))
		}
		var raw struct {
			Data []struct {
				Event json.RawMessage `json:"event"`
			} `json:"data"`
		}
		_ = json.Unmarshal(answer.body.Bytes(), &raw)
		var tokens []string
		for i, p := range res.Data {
			var event json.RawMessage
			if i < len(raw.Data) {
				event = raw.Data[i].Event
			}
			printPulled(stdout, p, event)
			tokens = append(tokens, p.LockToken)
		}
		got += len(res.Data)
		if len(tokens) == 0 || cfg.NoAck {
			continue
		}
		ack, err := c.Subscriptions.Acknowledge(ctx, cfg.Subscription, tokens)
		if err != nil {
			return fmt.Errorf("acknowledge: %s", describeError(err))
		}
		for _, f := range ack.Failed {
			fmt.Fprintf(stdout, "  not acknowledged: delivery=%s: %s\n", strings.SplitN(f.LockToken, ".", 2)[0], f.Error)
		}
	}
	return nil
}

// printPulled prints a received delivery's line, then its event (JSON,
// cut after 2 KiB).
func printPulled(w io.Writer, p client.ReceivedDelivery, body json.RawMessage) {
	var typ, id string
	if p.Event != nil {
		typ, id = p.Event.Type, p.Event.ID
	}
	fmt.Fprintf(w, "%s delivery=%s count=%d type=%s id=%s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		p.DeliveryID, p.DeliveryCount, logValue(typ), logValue(id))
	text := string(body)
	if len(text) > 2<<10 {
		text = text[:2<<10] + "…"
	}
	fmt.Fprintf(w, "  %s\n", text)
}
