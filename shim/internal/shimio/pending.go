package shimio

import "sync"

// Pending holds the permission requests a shim passed on to the bridge and
// has not had answered, by the request_id the bridge knows them by, each
// with what the shim needs to answer the CLI (the request's input, the
// CLI's own request id). The goroutine reading the CLI's stdout adds and
// drops requests while the one reading the bridge's answers takes them.
type Pending[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

// Put records the request id.
func (p *Pending[V]) Put(id string, v V) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]V{}
	}
	p.m[id] = v
}

// Take removes the request id, for its answer; ok is false when it is not
// pending (never asked, answered already, cancelled).
func (p *Pending[V]) Take(id string) (v V, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok = p.m[id]
	delete(p.m, id)
	return v, ok
}

// TakeAll removes every pending request, for the answers a shim gives
// itself once the bridge can no longer answer.
func (p *Pending[V]) TakeAll() map[string]V {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := p.m
	p.m = nil
	return all
}
