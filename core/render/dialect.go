package render

// Dialect is a chat platform's text markup.
type Dialect int

// The dialects agentbridge renders Markdown into.
const (
	Plain           Dialect = iota // plain text: terminals, and the fallback when markup is rejected
	SlackMrkdwn                    // Slack mrkdwn
	DiscordMarkdown                // Discord's Markdown flavour
	TelegramHTML                   // Telegram Bot API parse_mode=HTML
)

// String names the dialect for logs and config.
func (d Dialect) String() string {
	switch d {
	case Plain:
		return "plain"
	case SlackMrkdwn:
		return "slack-mrkdwn"
	case DiscordMarkdown:
		return "discord-markdown"
	case TelegramHTML:
		return "telegram-html"
	}
	return "unknown"
}
