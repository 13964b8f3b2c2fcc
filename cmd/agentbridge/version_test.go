package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/daemon/metrics"
)

func TestVersionFrom(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tt := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"tagged install", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"pseudo-version wins over vcs", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201092511-4260a59abcde"}, Settings: vcs("4260a59abcdef0123", "false")}, "v0.0.0-20261201092511-4260a59abcde"},
		{"checkout build", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("4260a59abcdef0123456", "false")}, "4260a59abcde"},
		{"dirty checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("4260a59abcdef0123456", "true")}, "4260a59abcde-dirty"},
		{"nothing known", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	} {
		if got := versionFrom(&tt.bi); got != tt.want {
			t.Errorf("%s: versionFrom = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestVersionStamped(t *testing.T) {
	old := version
	version = "v9.8.7"
	defer func() { version = old }()
	var out bytes.Buffer
	if err := run(t.Context(), []string{"version"}, nil, &out, &out); err != nil || out.String() != "agentbridge v9.8.7\n" {
		t.Errorf("version = %q, %v; want the stamped version", out.String(), err)
	}
}

func TestHealth(t *testing.T) {
	srv := httptest.NewServer(metrics.New().Handler())
	defer srv.Close()
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "draining", http.StatusServiceUnavailable)
	}))
	defer sick.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"health", srv.URL + "/healthz"}, 0, "ok"},
		{[]string{"health", sick.URL + "/healthz"}, 1, "503"},
		{[]string{"health", "--timeout", "5s", deadURL + "/healthz"}, 1, "connect"},
		{[]string{"health", "a", "b"}, 2, "at most one URL"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), tt.args, nil, &stdout, &stderr)
		code := exitStatus(err, &stderr)
		if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.msg) {
			t.Errorf("%v: exit %d, output %q %q; want %d mentioning %q", tt.args, code, stdout.String(), stderr.String(), tt.code, tt.msg)
		}
	}
}
