package node

import "sync"

// notice is a broadcast without a value: wait returns a channel that is
// closed at the next notify. The zero value is ready.
type notice struct {
	mu sync.Mutex
	ch chan struct{}
}

func (c *notice) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

func (c *notice) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}
