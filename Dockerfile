# syntax=docker/dockerfile:1
#
# Two images from one build (see docs/deployment.md):
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     -t agentbridge:VERSION .                       # slim (the default target)
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --target agents -t agentbridge-agents:VERSION .
#
# slim:   the static binary on Alpine with ssh and tini, for the built-in demo
#         and agents reached over a command (ssh, or docker / kubectl through
#         profiles/isolated with EXTRA_PACKAGES="docker-cli kubectl").
# agents: Debian (glibc, bash) with Node and the four agent CLIs at pinned
#         versions, so the ready profiles run as they are; also the image the
#         isolated profiles run each turn in.
#
# Both run as a non-root user, keep the store in the /var/lib/agentbridge
# volume (AGENTBRIDGE_STATE_DIR), read the config from
# /etc/agentbridge/config.yaml (mount the file read-only), and check
# /healthz with `agentbridge health` (set metrics.listen: ":9090").

ARG GO_VERSION=1.26
ARG ALPINE_VERSION=3.22
ARG NODE_VERSION=22

# --- build: the binary, exactly as deploy/build-binary builds it ---
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .dockerignore keeps .git out, so the version cannot come from the VCS
# here: it must be given.
ARG VERSION
RUN if [ -z "$VERSION" ]; then \
      echo 'set the version: docker build --build-arg VERSION=$(git describe --tags --always --dirty) ...' >&2; exit 1; \
    fi
RUN deploy/build-binary /out/agentbridge "$VERSION" && /out/agentbridge version

# --- agents: glibc, a shell, Node and the agent CLIs ---
FROM node:${NODE_VERSION}-bookworm-slim AS agents
# The CLI versions .ci/run installs for the live tests (deploy/image_test.go
# checks they agree).
ARG CLAUDE_CODE_VERSION=2.1.197
ARG CODEX_VERSION=0.171.0
ARG GEMINI_CLI_VERSION=0.61.0
ARG QWEN_CODE_VERSION=0.15.10
ARG VERSION
ARG REVISION=
LABEL org.opencontainers.image.title="agentbridge-agents" \
      org.opencontainers.image.description="agentbridge with Claude Code, Codex, Gemini CLI and Qwen Code" \
      org.opencontainers.image.source="https://github.com/agentbridge/agentbridge" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      io.agentbridge.cli.claude-code="${CLAUDE_CODE_VERSION}" \
      io.agentbridge.cli.codex="${CODEX_VERSION}" \
      io.agentbridge.cli.gemini-cli="${GEMINI_CLI_VERSION}" \
      io.agentbridge.cli.qwen-code="${QWEN_CODE_VERSION}"
# tini reaps what agents' tools leave behind; git and ssh are what coding
# agents reach for. The base image's Debian release fixes their versions.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates git openssh-client \
 && rm -rf /var/lib/apt/lists/*
RUN npm install -g --no-audit --no-fund --loglevel=error \
      "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
      "@openai/codex@${CODEX_VERSION}" \
      "@google/gemini-cli@${GEMINI_CLI_VERSION}" \
      "@qwen-code/qwen-code@${QWEN_CODE_VERSION}" \
 && npm cache clean --force
# uid 10001: internal/isolate.AgentUID, the fsGroup of the isolated pods.
RUN groupadd --gid 10001 agent \
 && useradd --uid 10001 --gid 10001 --home-dir /home/agent --create-home --shell /bin/bash agent \
 && mkdir -p /etc/agentbridge /var/lib/agentbridge /workspace \
 && chown agent:agent /var/lib/agentbridge /workspace
COPY --from=build /out/agentbridge /usr/local/bin/agentbridge
COPY profiles/ /etc/agentbridge/profiles/
ENV AGENTBRIDGE_STATE_DIR=/var/lib/agentbridge \
    HOME=/home/agent
# The store; the CLIs' logins and sessions (~/.claude, ~/.codex, ...); the
# agents' working directory (the ready profiles' default cwd).
VOLUME ["/var/lib/agentbridge", "/home/agent", "/workspace"]
WORKDIR /workspace
USER 10001:10001
EXPOSE 9090
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["agentbridge", "health"]
ENTRYPOINT ["/usr/bin/tini", "--", "agentbridge"]
CMD ["serve", "--config", "/etc/agentbridge/config.yaml"]

# --- slim: the static binary, ssh, tini ---
FROM alpine:${ALPINE_VERSION} AS slim
# Alpine packages to add, e.g. "docker-cli kubectl" for profiles/isolated.
ARG EXTRA_PACKAGES=
ARG VERSION
ARG REVISION=
LABEL org.opencontainers.image.title="agentbridge" \
      org.opencontainers.image.description="agentbridge: chat with command-line AI agents from Slack, Discord and Telegram" \
      org.opencontainers.image.source="https://github.com/agentbridge/agentbridge" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# The Alpine release fixes the package versions.
# hadolint ignore=DL3018
RUN apk add --no-cache tini ca-certificates openssh-client ${EXTRA_PACKAGES} \
 && addgroup -g 10001 agent \
 && adduser -D -u 10001 -G agent -h /home/agent agent \
 && mkdir -p /etc/agentbridge /var/lib/agentbridge \
 && chown agent:agent /var/lib/agentbridge
COPY --from=build /out/agentbridge /usr/local/bin/agentbridge
COPY profiles/ /etc/agentbridge/profiles/
ENV AGENTBRIDGE_STATE_DIR=/var/lib/agentbridge \
    HOME=/home/agent
VOLUME ["/var/lib/agentbridge", "/home/agent"]
WORKDIR /home/agent
USER 10001:10001
EXPOSE 9090
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["agentbridge", "health"]
ENTRYPOINT ["/sbin/tini", "--", "agentbridge"]
CMD ["serve", "--config", "/etc/agentbridge/config.yaml"]
