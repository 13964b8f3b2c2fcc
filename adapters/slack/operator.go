package slack

import (
	"github.com/agentbridge/agentbridge/adapters/internal/pace"
	"github.com/agentbridge/agentbridge/core"
)

var _ core.RateReporter = (*Adapter)(nil)

// RateUse implements core.RateReporter.
func (a *Adapter) RateUse() []core.RateUse {
	return []core.RateUse{
		rateUse("chat.postMessage per channel", a.posts),
		rateUse("chat.update per workspace", a.edits),
		rateUse("streaming per workspace", a.streams),
	}
}

func rateUse(name string, s *pace.Budgets) core.RateUse {
	inUse, refused := s.Use()
	return core.RateUse{Budget: name, InUse: inUse, Refused: refused}
}
