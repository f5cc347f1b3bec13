package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress keeps one status line on a terminal, rewritten in place with
// \r; on anything else it prints a full line every few seconds.
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	line  func() string
	width int // length of the line on screen
	done  chan struct{}
	wg    sync.WaitGroup
}

func newProgress(w io.Writer, tty bool) *progress {
	p := &progress{w: w, tty: tty, done: make(chan struct{})}
	if w == nil {
		return p
	}
	every := 5 * time.Second
	if tty {
		every = 250 * time.Millisecond
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
	return p
}

// set makes f the source of the status line (nil: none).
func (p *progress) set(f func() string) {
	p.mu.Lock()
	p.line = f
	p.mu.Unlock()
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.line == nil || p.w == nil {
		return
	}
	s := p.line()
	if !p.tty {
		fmt.Fprintln(p.w, s)
		return
	}
	pad := ""
	if n := p.width - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprint(p.w, "\r"+s+pad)
	p.width = len(s)
}

// printf prints a message on its own line (clearing the status line first).
func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	p.clearLocked()
	fmt.Fprintf(p.w, format, args...)
}

func (p *progress) clearLocked() {
	if p.tty && p.width > 0 {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.width)+"\r")
		p.width = 0
	}
}

// stop ends the status line.
func (p *progress) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
	p.mu.Lock()
	if p.w != nil {
		p.clearLocked()
	}
	p.mu.Unlock()
}
