package daemon

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/daemon/webconsole"
)

// health keeps each adapter's state as supervise sees it: running or not,
// restarts, the last error. It implements webconsole.Health.
type health struct {
	platforms []core.Platform // in the order of list

	mu   sync.Mutex
	list []webconsole.Adapter
}

func newHealth(platforms []core.Platform) *health {
	h := &health{platforms: platforms}
	for _, p := range platforms {
		h.list = append(h.list, webconsole.Adapter{Name: p.Name()})
	}
	return h
}

func (h *health) update(name string, f func(a *webconsole.Adapter)) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := slices.IndexFunc(h.list, func(a webconsole.Adapter) bool { return a.Name == name }); i >= 0 {
		f(&h.list[i])
	}
}

// started and stopped record one run of an adapter.
func (h *health) started(name string) {
	h.update(name, func(a *webconsole.Adapter) { a.Connected, a.Since = true, time.Now() })
}

func (h *health) stopped(name string, err error, restart bool) {
	h.update(name, func(a *webconsole.Adapter) {
		a.Connected, a.Since = false, time.Now()
		if err != nil {
			a.LastError, a.LastErrorAt = err.Error(), a.Since
		}
		if restart {
			a.Restarts++
		}
	})
}

// link is the address of a message in its platform's client, where the
// adapter gives one (core.Linker).
func (h *health) link(conv core.ConversationKey, messageID string) string {
	for _, p := range h.platforms {
		if l, ok := p.(core.Linker); ok && p.Name() == conv.Platform {
			return l.Link(conv, messageID)
		}
	}
	return ""
}

// name is a conversation's channel and thread names, where the adapter
// knows them (core.Namer).
func (h *health) name(conv core.ConversationKey) string {
	for _, p := range h.platforms {
		if n, ok := p.(core.Namer); ok && p.Name() == conv.Platform {
			return n.ConvName(conv)
		}
	}
	return ""
}

// Adapters implements webconsole.Health: what supervise saw, and the
// rate budgets' use of the adapters that report it.
func (h *health) Adapters() []webconsole.Adapter {
	h.mu.Lock()
	out := slices.Clone(h.list)
	h.mu.Unlock()
	for i, p := range h.platforms {
		if r, ok := p.(core.RateReporter); ok {
			out[i].Rates = r.RateUse()
		}
	}
	return out
}

// listenConsole binds the console's address, if one is configured, before
// anything starts, and loads its certificate.
func listenConsole(cfg *config.Config) (net.Listener, *tls.Certificate, error) {
	k := cfg.Console
	if k.Listen == "" {
		return nil, nil, nil
	}
	var cert *tls.Certificate
	if k.TLSCert != "" {
		c, err := tls.LoadX509KeyPair(k.TLSCert, k.TLSKey)
		if err != nil {
			return nil, nil, fmt.Errorf("console certificate: %w", err)
		}
		cert = &c
	}
	ln, err := net.Listen("tcp", k.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("console listener: %w", err)
	}
	return ln, cert, nil
}

// secretValues are the values no console page may show: every secret of
// the config and every profile's environment values, with the values of
// the variables they name.
func secretValues(cfg *config.Config, profs map[string]*agentproc.Profile) []string {
	var out []string
	for _, s := range cfg.Secrets() {
		out = append(out, s.Reveal())
	}
	for _, p := range profs {
		for _, v := range p.Env {
			out = append(out, v)
			os.Expand(v, func(name string) string {
				out = append(out, os.Getenv(name))
				return ""
			})
		}
	}
	return out
}
