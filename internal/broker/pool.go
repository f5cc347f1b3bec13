package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Pool bounds. A connection is one TCP connection (NATS, AMQP, MQTT) or
// one client of a Kafka cluster (a connection to each broker it talks
// to).
const (
	// MaxConns bounds the connections a Pool keeps open at once.
	MaxConns = 64
	// IdleTimeout is how long a connection no publish used is kept.
	IdleTimeout = 5 * time.Minute
)

// ErrPoolFull is wrapped by the error of a publish that found every
// connection of a full Pool in use.
var ErrPoolFull = errors.New("every broker connection Herald may keep is in use")

// Pool publishes through connections shared by every destination of the
// same broker, address and credentials (key): at most MaxConns open at
// once, the least recently used idle one closed to make room, each closed
// after IdleTimeout without use, and a broken one (Conn.Broken, or a
// publish that found the broker unreachable) dropped so that the next
// publish dials again: a restarted broker is reconnected to on the next
// attempt. A dial is made once for all the publishes waiting on it.
type Pool struct {
	connectors map[string]Connector
	dial       DialFunc
	now        func() time.Time

	mu     sync.Mutex
	conns  map[string]*pooled
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// pooled is one connection of the pool, or the dial that will make it.
type pooled struct {
	ready chan struct{} // closed when the dial ended: conn or err is set
	conn  Conn
	err   error
	users int       // publishes using it now
	used  time.Time // when the last publish released it
}

// NewPool returns a pool that opens connections with connectors (by
// Destination.Type), dialling with dial, and closes idle ones every
// IdleTimeout/2 until Close.
func NewPool(connectors map[string]Connector, dial DialFunc) *Pool {
	p := &Pool{
		connectors: connectors, dial: dial, now: time.Now,
		conns: make(map[string]*pooled), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go p.sweepLoop()
	return p
}

// Publish publishes m to d, whose target template resolves first
// (Resolve), through the pool's connection to d's broker, and waits for
// the broker's acknowledgement until ctx ends. Its error is an *Error
// (OutcomeOf).
func (p *Pool) Publish(ctx context.Context, d *Destination, m Message) error {
	target, err := Resolve(d.Type, d.Template(), m.Fields)
	if err != nil {
		return err
	}
	key := Key(d)
	pc, err := p.acquire(ctx, key, d)
	if err != nil {
		return err
	}
	err = pc.conn.Publish(ctx, d, target, m)
	p.release(key, pc, err != nil && (OutcomeOf(err) == OutcomeUnreachable || pc.conn.Broken()))
	return err
}

// Key is the pool's key of d's connections: its type, URL (with the
// credentials), seed brokers, TLS and SASL; not its target or mode.
func Key(d *Destination) string {
	var b strings.Builder
	b.WriteString(d.Type + "\x00" + d.URL + "\x00" + strings.Join(d.Brokers, ","))
	if t := d.TLS; t != nil {
		b.WriteString("\x00tls\x00" + t.ServerName + "\x00" + t.CAPEM)
	}
	if s := d.SASL; s != nil {
		b.WriteString("\x00" + s.Mechanism + "\x00" + s.Username + "\x00" + s.Password)
	}
	return b.String()
}

// acquire returns the connection of key, dialling it when there is none
// (or only a broken one), and counts the caller as its user.
func (p *Pool) acquire(ctx context.Context, key string, d *Destination) (*pooled, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, Unreachable(errors.New("broker pool closed"))
	}
	pc := p.conns[key]
	if pc != nil && pc.conn != nil && pc.conn.Broken() {
		p.dropLocked(key, pc)
		pc = nil
	}
	if pc == nil {
		if err := p.makeRoomLocked(); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		pc = &pooled{ready: make(chan struct{})}
		p.conns[key] = pc
		go p.connect(key, pc, d)
	}
	pc.users++
	p.mu.Unlock()
	select {
	case <-pc.ready:
	case <-ctx.Done():
		p.release(key, pc, false)
		return nil, TimedOut(fmt.Errorf("waiting for a connection to the broker: %w", ctx.Err()))
	}
	if pc.err != nil {
		p.release(key, pc, true)
		return nil, pc.err
	}
	return pc, nil
}

// connect dials pc's connection, within DialTimeout plus the time a
// handshake may take (connectTimeout): a dial is shared by every publish
// waiting on it, so it is not bound to the first one's context.
func (p *Pool) connect(key string, pc *pooled, d *Destination) {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	var conn Conn
	var err error
	if connector := p.connectors[d.Type]; connector == nil {
		err = Refusedf("no client for destination type %q", d.Type)
	} else if conn, err = connector(ctx, d, p.dial); err != nil {
		err = AfterConnect(err)
	}
	p.mu.Lock()
	pc.conn, pc.err = conn, err
	if conn != nil && p.conns[key] != pc && pc.users == 0 {
		// Dropped while it dialled (Close), and nobody waits for it.
		conn.Close()
		pc.conn = nil
	}
	p.mu.Unlock()
	close(pc.ready)
}

// connectTimeout bounds a connection's dial and protocol handshake.
const connectTimeout = DialTimeout + 20*time.Second

// release ends a publish's use of pc; broken drops pc from the pool (and
// closes its connection once no publish uses it).
func (p *Pool) release(key string, pc *pooled, broken bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc.users--
	pc.used = p.now()
	if broken {
		p.dropLocked(key, pc)
	}
	if p.conns[key] != pc && pc.users == 0 && pc.conn != nil {
		pc.conn.Close()
		pc.conn = nil
	}
}

// dropLocked removes pc from the pool; its connection is closed now when
// no publish uses it, else by the last one's release.
func (p *Pool) dropLocked(key string, pc *pooled) {
	if p.conns[key] == pc {
		delete(p.conns, key)
	}
	if pc.users == 0 && pc.conn != nil {
		pc.conn.Close()
		pc.conn = nil
	}
}

// makeRoomLocked closes the least recently used idle connection when the
// pool holds MaxConns; ErrPoolFull (OutcomeUnreachable) when each is in
// use.
func (p *Pool) makeRoomLocked() error {
	if len(p.conns) < MaxConns {
		return nil
	}
	var oldKey string
	var old *pooled
	for k, pc := range p.conns {
		if pc.users == 0 && (old == nil || pc.used.Before(old.used)) {
			oldKey, old = k, pc
		}
	}
	if old == nil {
		return Unreachable(fmt.Errorf("%w (%d)", ErrPoolFull, MaxConns))
	}
	p.dropLocked(oldKey, old)
	return nil
}

// sweepLoop closes idle connections until Close.
func (p *Pool) sweepLoop() {
	defer close(p.done)
	t := time.NewTicker(IdleTimeout / 2)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.sweep()
		}
	}
}

// sweep closes the connections no publish used for IdleTimeout, and the
// broken ones no publish uses.
func (p *Pool) sweep() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for k, pc := range p.conns {
		if pc.users > 0 || pc.conn == nil {
			continue
		}
		if now.Sub(pc.used) >= IdleTimeout || pc.conn.Broken() {
			p.dropLocked(k, pc)
		}
	}
}

// Len is how many connections (and dials) the pool holds.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close closes every connection no publish uses (the others at their
// release) and stops the sweeping; later publishes fail.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for k, pc := range p.conns {
		p.dropLocked(k, pc)
	}
	p.mu.Unlock()
	close(p.stop)
	<-p.done
}
