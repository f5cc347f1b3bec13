// Package brokertest runs brokers for tests: a NATS server with JetStream
// and a Mosquitto broker of the test's own (spawned from the machine's
// /usr/sbin binaries on a free port, so that a test may stop and restart
// them without touching the shared brokers), a kfake Kafka cluster, and a
// listener that accepts connections and never answers. It also names the
// machine's shared brokers (NATSURL, AMQPURL, MQTTURL).
package brokertest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The machine's shared brokers (docs/destinations.md, "Tests"): a test
// publishes to them and never stops them.
const (
	NATSURL = "nats://127.0.0.1:4222"
	AMQPURL = "amqp://guest:guest@127.0.0.1:5672/"
	MQTTURL = "mqtt://127.0.0.1:1883"
)

// startTimeout bounds how long a spawned broker takes to listen.
const startTimeout = 20 * time.Second

// FreePort returns a TCP port on 127.0.0.1 nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// Server is a broker process of a test's own, on Port.
type Server struct {
	t    testing.TB
	Port int
	args []string
	name string
	cmd  *exec.Cmd
}

// StartNATS runs nats-server with JetStream on a free port, its store in a
// temporary directory that outlives restarts, with args added (TLS, a
// user: NATSTLSArgs); it is killed when the test ends. The test is skipped
// when the machine has no nats-server.
func StartNATS(t testing.TB, args ...string) *Server {
	t.Helper()
	port := FreePort(t)
	dir := t.TempDir()
	s := &Server{t: t, Port: port, name: need(t, "/usr/sbin/nats-server"),
		args: append([]string{"-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", dir}, args...)}
	s.Start()
	return s
}

// NATSTLSArgs are nats-server's arguments for TLS with ca's server
// certificate and the user and password.
func NATSTLSArgs(ca *CA, user, password string) []string {
	return []string{"--tls", "--tlscert", ca.CertFile, "--tlskey", ca.KeyFile, "--user", user, "--pass", password}
}

// need returns binary, or skips the test when the machine has none.
func need(t testing.TB, binary string) string {
	t.Helper()
	if _, err := os.Stat(binary); err != nil {
		t.Skipf("%s is not installed on this machine (%v): this test runs a broker of its own", binary, err)
	}
	return binary
}

// StartMosquitto runs mosquitto on a free port with config (lines added to
// a configuration that listens on 127.0.0.1 and allows anonymous
// clients, and keeps running as root when started as root: mosquitto would
// otherwise switch to its own user, which cannot read the test's
// temporary files); it is killed when the test ends.
func StartMosquitto(t testing.TB, config string) *Server {
	t.Helper()
	port := FreePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mosquitto.conf")
	body := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n%s\n", port, config)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, Port: port, name: need(t, "/usr/sbin/mosquitto"), args: []string{"-c", conf}}
	s.Start()
	return s
}

// StartMosquittoTLS runs mosquitto (StartMosquitto) with a second
// listener, TLS with ca's server certificate, on a free port that it
// returns with the server.
func StartMosquittoTLS(t testing.TB, ca *CA) (*Server, string) {
	t.Helper()
	addr := ClosedPort(t)
	_, port, _ := net.SplitHostPort(addr)
	s := StartMosquitto(t, fmt.Sprintf("listener %s 127.0.0.1\ncertfile %s\nkeyfile %s\n", port, ca.CertFile, ca.KeyFile))
	WaitListening(t, addr)
	return s, addr
}

// Start starts the process and waits until its port accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	cmd := exec.Command(s.name, s.args...)
	// Its output goes nowhere: the test reports what it sees.
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", s.name, err)
	}
	s.cmd = cmd
	s.t.Cleanup(s.Stop)
	WaitListening(s.t, s.Addr())
}

// Stop kills the process (SIGKILL) and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Restart stops the process and starts it again on the same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// WaitListening waits until addr accepts a TCP connection, failing the
// test after startTimeout.
func WaitListening(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not accept connections after %s: %v", addr, startTimeout, err)
		}
		// Polled: a spawned process says nothing when it listens.
		time.Sleep(20 * time.Millisecond)
	}
}

// Silent returns the address of a listener that accepts connections,
// reads what they send and answers nothing: a broker that never
// acknowledges.
func Silent(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// ClosedPort returns an address on 127.0.0.1 where nothing listens.
func ClosedPort(t testing.TB) string {
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}
