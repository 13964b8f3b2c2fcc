// Package platforms lists the chat platforms this build of the bridge
// knows. Adding a platform is a package that provides a config.Kind (its
// config section, the checks of that section and its adapter's factory)
// and one entry here; nothing else names platforms.
package platforms

import (
	"github.com/agentbridge/agentbridge/adapters/console"
	"github.com/agentbridge/agentbridge/adapters/discord"
	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/config"
)

// All returns the platform kinds, in the order their sections are checked
// and their adapters started.
func All() []config.Kind {
	return []config.Kind{
		slack.Kind,
		discord.Kind,
		telegram.Kind,
		// The terminal (chat) has no section; routes may name it.
		{Name: console.Name},
	}
}
