package bench

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress writes a line every interval while a scenario runs: what was
// published and delivered, the delivery rate and p99 latency over the last
// interval, and the dispatcher's memory.
type progress struct {
	out      io.Writer
	every    time.Duration
	name     string
	rec      *recorder
	expected int

	mu         sync.Mutex
	dispatcher RunningDispatcher

	done     chan struct{}
	stopOnce sync.Once
	stopped  sync.WaitGroup
}

func (r *runner) startProgress(name string, rec *recorder, expected int) *progress {
	p := &progress{out: r.cfg.Progress, every: r.cfg.ProgressEvery, name: name, rec: rec, expected: expected, done: make(chan struct{})}
	if p.out == nil {
		return p
	}
	p.stopped.Add(1)
	go p.loop()
	return p
}

// watch adds the dispatcher's memory to the lines.
func (p *progress) watch(d RunningDispatcher) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dispatcher = d
}

func (p *progress) stop() {
	p.stopOnce.Do(func() { close(p.done) })
	p.stopped.Wait()
}

func (p *progress) loop() {
	defer p.stopped.Done()
	tick := time.NewTicker(p.every)
	defer tick.Stop()
	start := time.Now()
	lastDelivered, from := int64(0), 0
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		delivered := p.rec.delivered.Load()
		var latencies []time.Duration
		latencies, from = p.rec.recentLatencies(from)
		line := fmt.Sprintf("%-17s %5.0fs  published %7d  delivered %7d/%d  %6.0f/s  p99 %7.1f ms",
			p.name, time.Since(start).Seconds(), p.rec.published.Load(), delivered, p.expected,
			float64(delivered-lastDelivered)/p.every.Seconds(), summarise(latencies).P99)
		lastDelivered = delivered
		p.mu.Lock()
		d := p.dispatcher
		p.mu.Unlock()
		if d != nil {
			if u, err := d.Usage(); err == nil {
				line += fmt.Sprintf("  dispatcher %4.0f MB", float64(u.RSS)/(1<<20))
			}
		}
		fmt.Fprintln(p.out, line)
	}
}
