package core_test

import (
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

// TestAccessRules is the table of the one access rule: deny unless listed,
// "*" allows anyone (users) or any chat, an empty id is never allowed, and
// approvers have no wildcard.
func TestAccessRules(t *testing.T) {
	tests := []struct {
		name     string
		a        core.Access
		id       string
		user     bool // allowed as a user
		chat     bool // allowed through a chat of that id
		approver bool
	}{
		{"empty denies", core.Access{}, "U1", false, false, false},
		{"listed", core.Access{Users: []string{"U1"}, Chats: []string{"U1"}, Approvers: []string{"U1"}}, "U1", true, true, true},
		{"other id", core.Access{Users: []string{"U1"}, Chats: []string{"C1"}, Approvers: []string{"U1"}}, "U2", false, false, false},
		{"wildcard", core.Access{Users: []string{"*"}, Chats: []string{"*"}, Approvers: []string{"*"}}, "U7", true, true, false},
		{"empty id never allowed", core.Access{Users: []string{"*", ""}, Chats: []string{"*"}, Approvers: []string{""}}, "", false, false, false},
		{"wildcard id is not an approver", core.Access{Approvers: []string{"*"}}, "*", false, false, false},
		{"case matters", core.Access{Users: []string{"u1"}}, "U1", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			users, chats := tt.a, tt.a
			users.Chats, chats.Users = nil, nil
			got := [3]bool{
				users.Allows(core.ConversationKey{Channel: "elsewhere"}, tt.id),
				chats.Allows(core.ConversationKey{Channel: tt.id}, "someone-else"),
				tt.a.Approver(tt.id),
			}
			if want := [3]bool{tt.user, tt.chat, tt.approver}; got != want {
				t.Errorf("user, chat, approver(%q) = %v, want %v", tt.id, got, want)
			}
		})
	}
}

// TestAccessNames: the channels the lists name, for serve's trigger. A
// user wildcard names none.
func TestAccessNames(t *testing.T) {
	tests := []struct {
		name    string
		a       core.Access
		channel string
		want    bool
	}{
		{"empty", core.Access{}, "C1", false},
		{"a listed chat", core.Access{Chats: []string{"C1"}}, "C1", true},
		{"any chat", core.Access{Chats: []string{"*"}}, "C9", true},
		{"a user's private chat", core.Access{Users: []string{"42"}}, "42", true},
		{"any user names no channel", core.Access{Users: []string{"*"}}, "C9", false},
		{"approvers name none", core.Access{Approvers: []string{"C1"}}, "C1", false},
		{"an empty channel", core.Access{Chats: []string{"*"}, Users: []string{""}}, "", false},
	}
	for _, tt := range tests {
		if got := tt.a.Names(tt.channel); got != tt.want {
			t.Errorf("%s: Names(%q) = %v, want %v", tt.name, tt.channel, got, tt.want)
		}
	}
}
