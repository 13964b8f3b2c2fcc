package config_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/core"
)

func TestConsole(t *testing.T) {
	cfg, err := parse([]byte(head+"console: {listen: 127.0.0.1:8790, token: '${CONSOLE_TOKEN}'}\n"), "c.yaml",
		env(map[string]string{"CONSOLE_TOKEN": "0123456789abcdef0123"}))
	if err != nil {
		t.Fatal(err)
	}
	if k := cfg.Console; k.Listen != "127.0.0.1:8790" || k.Token.Reveal() != "0123456789abcdef0123" || k.Insecure || k.TLSCert != "" {
		t.Errorf("console = %+v", k)
	}
	if !slices.Contains(cfg.Secrets(), core.Secret("0123456789abcdef0123")) {
		t.Errorf("Secrets() lacks the console token")
	}
	// Off by default.
	cfg, err = parse([]byte(head), "c.yaml", env(nil))
	if err != nil || cfg.Console.Listen != "" {
		t.Errorf("console without a section: %+v, %v", cfg.Console, err)
	}
	// insecure allows plain HTTP off loopback.
	if _, err := parse([]byte(head+"console: {listen: 0.0.0.0:8790, token: '${T}', insecure: true}\n"), "c.yaml", env(map[string]string{"T": "0123456789abcdef0123"})); err != nil {
		t.Errorf("insecure: %v", err)
	}
}

func TestConsoleProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"plain HTTP off loopback", "console: {listen: 0.0.0.0:8790, token: '${T}'}\n",
			[]string{"c.yaml:3: console.listen: 0.0.0.0:8790 is not a loopback address: serving there in plain HTTP would send the token readable over the network; set tls_cert and tls_key, or insecure: true behind a TLS proxy"}},
		{"every interface", "console: {listen: ':8790', token: '${T}'}\n",
			[]string{"c.yaml:3: console.listen: :8790 is not a loopback address: serving there in plain HTTP would send the token readable over the network; set tls_cert and tls_key, or insecure: true behind a TLS proxy"}},
		{"without token", "console: {listen: 127.0.0.1:8790}\n",
			[]string{"c.yaml:3: console.token: is required when console.listen is set: the token operators log in with"}},
		{"without listen", "console: {token: '${T}'}\n",
			[]string{"c.yaml:3: console.listen: is required when console.token is set: the host:port to serve the console on"}},
		{"cert without key", "console: {listen: 127.0.0.1:8790, token: '${T}', tls_cert: c.pem}\n",
			[]string{"c.yaml:3: console.tls_key: set tls_cert and tls_key together (a PEM certificate and its key), or neither"}},
		{"missing cert", "console: {listen: 127.0.0.1:8790, token: '${T}', tls_cert: /nonexistent/c.pem, tls_key: /nonexistent/k.pem}\n",
			[]string{"c.yaml:3: console.tls_cert: cannot load the certificate and key: open /nonexistent/c.pem: no such file or directory"}},
		{"on the trigger's address", "trigger: {listen: 127.0.0.1:8787, token: '${T}'}\nconsole: {listen: 127.0.0.1:8787, token: '${T}'}\n",
			[]string{"c.yaml:4: console.listen: the same address as trigger.listen (line 3): two listeners cannot share one"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(head+tc.yaml), "c.yaml", env(map[string]string{"T": "0123456789abcdef0123"}))
			if diff := cmp.Diff(tc.want, problems(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
