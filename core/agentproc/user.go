// This file: the profile's user (a bridge extension) — which account the
// agent runs as when the bridge runs as root, so the agent cannot read what
// only the bridge's account may (the config, the store, the bridge's HOME).

package agentproc

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// AgentUser is the account a profile's agent runs as (profile key user:):
// a user name, a uid, or uid:gid, resolved when the profile is read.
type AgentUser struct {
	Spec     string   // as written in the profile
	UID, GID uint32   // the agent's uid and primary gid
	Groups   []uint32 // supplementary groups: the named account's; none for uid:gid
	Name     string   // the account's name, "" when the user database has none
	Home     string   // the account's home directory, "" when unknown
}

// geteuid is os.Geteuid; tests replace it to see a bridge that is not root.
var geteuid = os.Geteuid

// parseAgentUser resolves a profile's user: value. Starting an agent as
// another account takes root, so for a bridge that is not root anything but
// its own uid is an error now, not at the first turn.
func parseAgentUser(spec string) (*AgentUser, error) {
	u := &AgentUser{Spec: spec}
	var acct *user.User
	uidText, gidText, pair := strings.Cut(spec, ":")
	switch {
	case spec == "":
		return nil, errors.New("must name a user (a name, a uid, or uid:gid)")
	case pair:
		uid, err1 := parseID(uidText)
		gid, err2 := parseID(gidText)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q is not uid:gid (two numbers, e.g. 10001:10001)", spec)
		}
		u.UID, u.GID = uid, gid
		acct, _ = user.LookupId(uidText) // for HOME and USER, when it is there
	default:
		var err error
		if _, notID := parseID(spec); notID != nil {
			if acct, err = user.Lookup(spec); err != nil {
				return nil, fmt.Errorf("no user named %q on this system", spec)
			}
		} else if acct, err = user.LookupId(spec); err != nil {
			return nil, fmt.Errorf("no account with uid %s on this system (give uid:gid to use a uid without one)", spec)
		}
		uid, err1 := parseID(acct.Uid)
		gid, err2 := parseID(acct.Gid)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("user %q has a uid or gid that is not a number", spec)
		}
		u.UID, u.GID = uid, gid
		if ids, err := acct.GroupIds(); err == nil {
			for _, id := range ids {
				if g, err := parseID(id); err == nil && g != gid {
					u.Groups = append(u.Groups, g)
				}
			}
		}
	}
	if acct != nil {
		u.Name, u.Home = acct.Username, acct.HomeDir
	}
	if euid := geteuid(); euid != 0 && uint32(euid) != u.UID {
		return nil, fmt.Errorf("agentbridge runs as uid %d, not root, so it cannot start the agent as %s (uid %d); run agentbridge as root, or leave user: out to run the agent as uid %d", euid, spec, u.UID, euid)
	}
	return u, nil
}

// parseID reads a uid or gid: a decimal number below 2^32-1 (which is -1,
// "no change", to the kernel).
func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, fmt.Errorf("%q is not a uid or gid", s)
	}
	return uint32(n), nil
}

// credential is what the agent's process is started with: nil (the bridge's
// own account) when the profile names no user. Setting it also clears the
// supplementary groups the bridge has, leaving only the account's.
func (u *AgentUser) credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}

// Own gives path to the profile's user, so that its agent can read a file
// the bridge wrote for it (a turn's attachments, in a directory only the
// bridge's account could otherwise enter). Without a user it does nothing.
func (p *Profile) Own(path string) error {
	if p.User == nil {
		return nil
	}
	if err := os.Lchown(path, int(p.User.UID), int(p.User.GID)); err != nil {
		return fmt.Errorf("give %s to the agent's user %s: %w", path, p.User.Spec, err)
	}
	return nil
}
