package engine

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
		ps       PlatformSettings
		id       string
		user     bool // allowed as a user
		chat     bool // allowed through a chat of that id
		approver bool
	}{
		{"empty denies", PlatformSettings{}, "U1", false, false, false},
		{"listed", PlatformSettings{AllowUsers: []string{"U1"}, AllowChats: []string{"U1"}, Approvers: []string{"U1"}}, "U1", true, true, true},
		{"other id", PlatformSettings{AllowUsers: []string{"U1"}, AllowChats: []string{"C1"}, Approvers: []string{"U1"}}, "U2", false, false, false},
		{"wildcard", PlatformSettings{AllowUsers: []string{"*"}, AllowChats: []string{"*"}, Approvers: []string{"*"}}, "U7", true, true, false},
		{"empty id never allowed", PlatformSettings{AllowUsers: []string{"*", ""}, AllowChats: []string{"*"}, Approvers: []string{""}}, "", false, false, false},
		{"wildcard id is not an approver", PlatformSettings{Approvers: []string{"*"}}, "*", false, false, false},
		{"case matters", PlatformSettings{AllowUsers: []string{"u1"}}, "U1", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			users, chats := tt.ps, tt.ps
			users.AllowChats, chats.AllowUsers = nil, nil
			got := [3]bool{
				users.allowed(core.ConversationKey{Channel: "elsewhere"}, tt.id),
				chats.allowed(core.ConversationKey{Channel: tt.id}, "someone-else"),
				tt.ps.approver(tt.id),
			}
			if want := [3]bool{tt.user, tt.chat, tt.approver}; got != want {
				t.Errorf("user, chat, approver(%q) = %v, want %v", tt.id, got, want)
			}
		})
	}
}
