module github.com/agentbridge/agentbridge

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/yuin/goldmark v1.8.7
	go.etcd.io/bbolt v1.4.3
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/kr/text v0.2.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
