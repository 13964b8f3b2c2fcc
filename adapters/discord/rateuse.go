package discord

import "github.com/agentbridge/agentbridge/core"

var _ core.RateReporter = (*Adapter)(nil)

// RateUse implements core.RateReporter.
func (a *Adapter) RateUse() []core.RateUse {
	routeUse, routeRefused := a.rt.routes.Use()
	globalUse, globalRefused := a.rt.global.Use()
	return []core.RateUse{
		{Budget: "per route bucket", InUse: routeUse, Refused: routeRefused},
		{Budget: "global", InUse: globalUse, Refused: globalRefused},
	}
}
