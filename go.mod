module github.com/agentbridge/agentbridge

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/yuin/goldmark v1.8.7 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
