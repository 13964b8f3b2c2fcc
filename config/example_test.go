package config_test

import (
	"fmt"

	"github.com/agentbridge/agentbridge/adapters/platforms"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

func ExampleParse() {
	file := []byte(`profiles:
  demo: builtin:demo
default_profile: demo
queue_depth: 500
slack:
  enabled: true
  bot_token: ${SLACK_BOT_TOKEN}
  app_token: ${SLACK_APP_TOKEN}
  mode: sockets
`)
	env := func(name string) (string, bool) {
		if name == "SLACK_APP_TOKEN" {
			return "xapp-1-A1-1234", true
		}
		return "", false
	}
	_, err := config.Parse(file, "bridge.yaml", config.Options{Platforms: platforms.All(), LookupEnv: env})
	fmt.Println(err)
	// Output:
	// bridge.yaml:4: queue_depth: must be between 1 and 100, got 500
	// bridge.yaml:7: slack.bot_token: environment variable SLACK_BOT_TOKEN is not set
	// bridge.yaml:9: slack.mode: must be one of socket, events, got "sockets"
}

func ExampleConfig_ProfileFor() {
	cfg, err := config.Parse([]byte(`profiles: {demo: builtin:demo, claude: claude.yaml}
default_profile: demo
routes:
  - {platform: slack, channel: C0456, profile: claude}
`), "bridge.yaml", config.Options{Platforms: platforms.All()})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.ProfileFor(core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C0456", Thread: "1.5"}))
	fmt.Println(cfg.ProfileFor(core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C0456"}))
	// Output:
	// claude
	// demo
}
