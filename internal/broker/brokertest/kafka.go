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
	opts   []kfake.Opt
	c      *kfake.Cluster
}

// StartKafka starts a kfake cluster holding topics; it is closed when the
// test ends.
func StartKafka(t testing.TB, topics ...string) *Kafka {
	t.Helper()
	return StartKafkaWith(t, nil, topics...)
}

// StartKafkaWith is StartKafka with kfake's options opts added (TLS,
// SASL users).
func StartKafkaWith(t testing.TB, opts []kfake.Opt, topics ...string) *Kafka {
	t.Helper()
	k := &Kafka{t: t, Port: FreePort(t), topics: topics, opts: opts}
	k.Start()
	t.Cleanup(k.Stop)
	return k
}

// Start starts the cluster.
func (k *Kafka) Start() {
	k.t.Helper()
	opts := append([]kfake.Opt{kfake.NumBrokers(1), kfake.Ports(k.Port), kfake.SeedTopics(3, k.topics...)}, k.opts...)
	c, err := kfake.NewCluster(opts...)
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
