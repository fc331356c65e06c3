package sqlproxy

import (
	"sync"
	"time"
)

// pool keeps idle backend connections per poolKey, newest last.
type pool struct {
	mu      sync.Mutex
	idle    map[poolKey][]*backend
	maxIdle int
	timeout time.Duration
}

func newPool(maxIdle int, timeout time.Duration) *pool {
	return &pool{idle: map[poolKey][]*backend{}, maxIdle: maxIdle, timeout: timeout}
}

func (p *pool) get(k poolKey) *backend {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.idle[k]
	if len(l) == 0 {
		return nil
	}
	b := l[len(l)-1]
	p.idle[k] = l[:len(l)-1]
	return b
}

func (p *pool) put(b *backend) {
	b.idleAt = time.Now()
	p.mu.Lock()
	l := p.idle[b.key]
	if len(l) >= p.maxIdle {
		p.mu.Unlock()
		b.close()
		return
	}
	p.idle[b.key] = append(l, b)
	p.mu.Unlock()
}

// take removes b from the idle lists; false if it is not there.
func (p *pool) take(b *backend) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.idle[b.key]
	for i, x := range l {
		if x == b {
			p.idle[b.key] = append(l[:i:i], l[i+1:]...)
			return true
		}
	}
	return false
}

// sweep closes connections idle longer than the timeout or whose address
// is not in keep (a former master).
func (p *pool) sweep(keep func(addr string) bool) {
	now := time.Now()
	p.mu.Lock()
	var drop []*backend
	for k, l := range p.idle {
		n := l[:0]
		for _, b := range l {
			if now.Sub(b.idleAt) > p.timeout || !keep(k.addr) {
				drop = append(drop, b)
			} else {
				n = append(n, b)
			}
		}
		if len(n) == 0 {
			delete(p.idle, k)
		} else {
			p.idle[k] = n
		}
	}
	p.mu.Unlock()
	for _, b := range drop {
		b.close()
	}
}

// counts reports idle connections per address.
func (p *pool) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[string]int{}
	for k, l := range p.idle {
		m[k.addr] += len(l)
	}
	return m
}

func (p *pool) closeAll() {
	p.sweep(func(string) bool { return false })
}
