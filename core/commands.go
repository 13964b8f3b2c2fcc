package core

import "strings"

// CommandAccess says who may use a bridge command.
type CommandAccess int

// Who may use a command.
const (
	// CommandAllowed: users the platform's access lists allow.
	CommandAllowed CommandAccess = iota
	// CommandAnyone: anyone who can write to the bot, so that a user who
	// is not allowed can still learn the id to ask for.
	CommandAnyone
)

// CommandEffect says whether a command changes the conversation, which
// decides whether a platform answers its slash form in public.
type CommandEffect int

// What a command does to the conversation.
const (
	// ReadsOnly: it only shows something (help, status).
	ReadsOnly CommandEffect = iota
	// Changes: it changes the shared conversation (new, stop).
	Changes
	// ChangesWithArg: it shows without an argument and changes with one
	// (session NAME).
	ChangesWithArg
)

// Command is one of the bridge's own commands. The engine holds each one's
// handler, by name (a test holds the two tables to each other); every
// adapter builds its platform's command surface (Telegram's menu, the
// Discord and Slack /agent slash commands) from Commands: a command is
// described here and handled there, nowhere else.
type Command struct {
	// Name is the word after the prefix: "new" for "/new".
	Name string
	// Description is one short lowercase line, as help shows it after
	// the name (Discord allows 100 characters).
	Description string
	// Arg names the argument as help shows it ("NAME"); "" when the
	// command takes none. It is optional unless ArgRequired.
	Arg string
	// ArgRequired: the command needs its argument (/forget NAME).
	ArgRequired bool
	// ArgDescription describes the argument (Discord shows it).
	ArgDescription string
	// ArgProfile marks an argument that names a profile: a platform that
	// registers fixed choices offers the configured profiles.
	ArgProfile bool
	// Access says who may use the command.
	Access CommandAccess
	// Effect says whether the command changes the conversation.
	Effect CommandEffect
}

// Private reports whether the answer to the command with arg concerns only
// the one who sent it (shown only to them where the platform can, as
// Discord's ephemeral slash responses): commands that change the shared
// conversation are answered in public, like their typed form.
func (c Command) Private(arg string) bool {
	switch c.Effect {
	case Changes:
		return false
	case ChangesWithArg:
		return arg == ""
	}
	return true
}

// Commands are the bridge's commands in the order help shows them.
// Anything else that starts with the prefix goes to the agent, which may
// have commands of its own.
var Commands = []Command{
	{Name: "new", Description: "start a fresh agent session in this conversation", Effect: Changes},
	{Name: "stop", Description: "stop the running turn and cancel queued messages", Effect: Changes},
	{Name: "status", Description: "show the running turn, the queue and the session"},
	{Name: "agent", Description: "show the agents offered here with the current one marked, or switch to NAME",
		Arg: "NAME", ArgDescription: "the profile to switch this conversation to", ArgProfile: true, Effect: ChangesWithArg},
	{Name: "session", Description: "switch to (or create) the session NAME; without NAME, show the active one",
		Arg: "NAME", ArgDescription: "session name: letters, digits, '.', '_' or '-'", Effect: ChangesWithArg},
	{Name: "sessions", Description: "list this conversation's sessions with their agent, turns and last use"},
	{Name: "forget", Description: "delete the session NAME (not the active one: switch or /new first)",
		Arg: "NAME", ArgRequired: true, ArgDescription: "the session to delete", Effect: Changes},
	{Name: "schedules", Description: "list the scheduled turns that post in this channel, and when they run next"},
	{Name: "usage", Description: "show tokens and cost of this session, this conversation and the last 24 h here"},
	{Name: "help", Description: "show the bridge's commands"},
	{Name: "whoami", Description: "show your user id, for the operator's allow list", Access: CommandAnyone},
}

// LookupCommand returns the command named name (any case).
func LookupCommand(name string) (Command, bool) {
	name = strings.ToLower(name)
	for _, c := range Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// BareCommand reports whether text, written to the bot by name ("@bot
// new"), is a whole bridge command without the prefix: a command word,
// plus one argument word for a command that takes one. "@bot help me with
// Go" is not: it goes to the agent.
func BareCommand(text string) (cmd, arg string, ok bool) {
	fields := strings.Fields(text)
	if len(fields) == 0 || len(fields) > 2 {
		return "", "", false
	}
	c, known := LookupCommand(fields[0])
	if !known || (len(fields) == 2 && c.Arg == "") {
		return "", "", false
	}
	if len(fields) == 2 {
		arg = fields[1]
	}
	return c.Name, arg, true
}
