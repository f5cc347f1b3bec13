package brokertest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// DeafAMQPProxy forwards connections to the shared RabbitMQ (AMQPURL) until deafen; then
// it reads nothing more of what the client sends (the client's writes fill
// the sockets' buffers and block) and keeps the broker's side alive with
// heartbeat frames of its own, while the broker's heartbeats still reach
// the client: a broker that takes a connection and stops reading it.
func DeafAMQPProxy(t testing.TB) (addr string, deafen func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deaf := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { l.Close(); once.Do(func() { close(deaf) }) })
	heartbeat := []byte{8, 0, 0, 0, 0, 0, 0, 0xCE}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", "127.0.0.1:5672")
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); up.Close() })
			go io.Copy(c, up)
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					select {
					case <-deaf: // what it read is dropped: no partial frame reaches the broker
						tick := time.NewTicker(500 * time.Millisecond)
						defer tick.Stop()
						for range tick.C {
							if _, err := up.Write(heartbeat); err != nil {
								return
							}
						}
					default:
					}
					if err != nil {
						return
					}
					if _, err := up.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String(), func() { once.Do(func() { close(deaf) }) }
}
