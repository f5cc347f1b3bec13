package brokertest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Kafka is a kfake cluster (franz-go's in-process Kafka: the Kafka wire
// protocol, no Kafka broker runs on the project's machines) of one broker
// on a port of its own, holding topics (3 partitions each), that a test
// can stop and start again on the same port (empty then, the topics made
// again).
type Kafka struct {
	t      testing.TB
	Port   int
	topics []string
	c      *kfake.Cluster
}

// StartKafka starts a kfake cluster holding topics; it is closed when the
// test ends.
func StartKafka(t testing.TB, topics ...string) *Kafka {
	t.Helper()
	k := &Kafka{t: t, Port: FreePort(t), topics: topics}
	k.Start()
	t.Cleanup(k.Stop)
	return k
}

// Start starts the cluster.
func (k *Kafka) Start() {
	k.t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(k.Port), kfake.SeedTopics(3, k.topics...))
	if err != nil {
		k.t.Fatal(err)
	}
	k.c = c
}

// Stop closes the cluster.
func (k *Kafka) Stop() {
	if k.c != nil {
		k.c.Close()
		k.c = nil
	}
}

// Addrs are the cluster's broker addresses.
func (k *Kafka) Addrs() []string { return k.c.ListenAddrs() }
