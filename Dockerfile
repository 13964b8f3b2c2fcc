# Build: a static binary, no cgo.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/agentbridge ./cmd/agentbridge

# Run: distroless, non-root. Agent CLIs a profile needs must be added in a
# derived image (or run elsewhere through the profile's command, e.g. ssh or
# kubectl run -i).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/agentbridge /usr/local/bin/agentbridge
VOLUME /var/lib/agentbridge
WORKDIR /var/lib/agentbridge
ENTRYPOINT ["/usr/local/bin/agentbridge"]
CMD ["serve", "--config", "/etc/agentbridge/config.yaml"]
