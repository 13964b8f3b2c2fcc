package slack

import (
	"sync"
	"time"
)

// The threads the bot takes part in are recorded in the store (Options.Store,
// the record that outlives a restart) and cached in memory. The cache is
// bounded: when it is full, threads idle for threadIdle go, and if that
// frees nothing it starts afresh; a thread that went is read back from the
// store when someone writes in it again.
const (
	maxThreads = 10_000
	threadIdle = time.Hour
)

// threadCache remembers threads by key with when they were last active.
type threadCache struct {
	mu   sync.Mutex
	max  int
	idle time.Duration
	last map[string]time.Time
}

func newThreadCache(max int, idle time.Duration) *threadCache {
	return &threadCache{max: max, idle: idle, last: map[string]time.Time{}}
}

// has reports whether key is cached, marking it active at now if so.
func (c *threadCache) has(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.last[key]; !ok {
		return false
	}
	c.last[key] = now
	return true
}

// touch caches key as active at now and reports whether it was cached.
func (c *threadCache) touch(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, known := c.last[key]
	if !known && len(c.last) >= c.max {
		for k, at := range c.last {
			if now.Sub(at) >= c.idle {
				delete(c.last, k)
			}
		}
		if len(c.last) >= c.max {
			clear(c.last)
		}
	}
	c.last[key] = now
	return known
}

// len reports how many threads are cached.
func (c *threadCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.last)
}
