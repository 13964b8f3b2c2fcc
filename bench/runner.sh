#!/usr/bin/env bash
# bench/runner.sh — agentbridge's AgentProc runner side by side with the
# reference Node runner (npm agentproc 0.14.0) on the same agents, in one run.
#
#   bench/runner.sh            # full run (about 2–3 minutes on 2 cores)
#   BENCH_QUICK=1 bench/runner.sh   # fewer repetitions, for trying the script
#
# Needs go, node/npm, hyperfine and GNU time (/usr/bin/time; Debian package
# "time"). Installs agentproc@0.14.0 into $BENCH_CACHE (default
# ~/.cache/agentbridge-bench) on first use. Every step runs under `timeout`,
# so the script always ends by itself. Not part of `go test ./...`.
# Prints a Markdown table; raw hyperfine JSON is kept in $BENCH_CACHE/results.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbridge-bench}
bin=$cache/bin
prof=$cache/profiles
res=$cache/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$bin" "$prof" "$res"

if [[ -n ${BENCH_QUICK:-} ]]; then
	trivial_runs=10 rss_runs=3 stream_runs=1 overhead_turns=50
else
	trivial_runs=60 rss_runs=7 stream_runs=5 overhead_turns=400
fi

say() { printf '%s\n' "$*" >&2; }
die() { say "runner.sh: $*"; exit 1; }

for tool in go node npm hyperfine jq timeout; do
	command -v "$tool" >/dev/null || die "$tool is not installed (hyperfine: apt-get install -y hyperfine)"
done
[[ -x /usr/bin/time ]] || die "GNU time is missing: apt-get install -y time"

# The reference runner, pinned.
node_cli=$cache/npm/node_modules/.bin/agentproc
if [[ ! -x $node_cli ]] || [[ $(jq -r .version "$cache/npm/node_modules/agentproc/package.json") != 0.14.0 ]]; then
	say "installing agentproc@0.14.0 into $cache/npm"
	timeout 300 npm install --silent --no-audit --no-fund --prefix "$cache/npm" agentproc@0.14.0 >&2
fi
node_version=$(node --version)

say "building agentbridge, the agents and the in-process driver"
(cd "$root" && timeout 300 go build -o "$bin/agentbridge" ./cmd/agentbridge &&
	timeout 300 go build -o "$bin/" ./bench/agents/trivial ./bench/agents/partials ./bench/drive)

small_n=1000000
big_n=100
big_size=1048576
cat >"$prof/trivial.yaml" <<EOF
command: $bin/trivial
timeout_secs: 60
streaming: true
EOF
cat >"$prof/small.yaml" <<EOF
command: $bin/partials
env:
  BENCH_COUNT: "$small_n"
  BENCH_SIZE: "0"
timeout_secs: 300
streaming: true
EOF
cat >"$prof/big.yaml" <<EOF
command: $bin/partials
env:
  BENCH_COUNT: "$big_n"
  BENCH_SIZE: "$big_size"
timeout_secs: 300
streaming: true
EOF

# Sanity: both runners give the same reply on the trivial agent.
[[ $(timeout 60 "$bin/agentbridge" run --profile "$prof/trivial.yaml" hi) == ok ]] || die "agentbridge run: unexpected reply"
[[ $(timeout 60 "$node_cli" --profile "$prof/trivial.yaml" --prompt hi --quiet) == ok ]] || die "agentproc: unexpected reply"

# hyper NAME RUNS WARMUP CMD... — median wall seconds of each command in
# $res/NAME.json (hyperfine without a shell; stdin and stdout are /dev/null).
hyper() {
	local name=$1 runs=$2 warmup=$3
	shift 3
	timeout 900 hyperfine -N --style none --runs "$runs" --warmup "$warmup" \
		--export-json "$res/$name.json" "$@" >/dev/null
}
median_ms() { jq -r --argjson i "$2" '.results[$i].median * 1000' "$res/$1.json"; }

# peak_rss_mib RUNS CMD... — median over RUNS of the peak RSS of CMD (MiB).
peak_rss_mib() {
	local runs=$1
	shift
	for _ in $(seq "$runs"); do
		timeout 300 /usr/bin/time -f '%M' -o "$res/rss.tmp" "$@" </dev/null >/dev/null 2>"$res/rss.err" ||
			die "failed: $* ($(tail -3 "$res/rss.err"))"
		cat "$res/rss.tmp"
	done | sort -n | awk '{v[NR]=$1} END {printf "%.1f", v[int((NR+1)/2)]/1024}'
}

ab_trivial=("$bin/agentbridge" run --profile "$prof/trivial.yaml" hi)
node_trivial=("$node_cli" --profile "$prof/trivial.yaml" --prompt hi --quiet)

say "trivial turn: wall time ($trivial_runs runs each)"
hyper trivial "$trivial_runs" 5 \
	-n bare "$bin/trivial" \
	-n agentbridge "${ab_trivial[*]}" \
	-n node "${node_trivial[*]}"
say "trivial turn: peak RSS ($rss_runs runs each)"
rss_bare=$(peak_rss_mib "$rss_runs" "$bin/trivial")
rss_ab=$(peak_rss_mib "$rss_runs" "${ab_trivial[@]}")
rss_node=$(peak_rss_mib "$rss_runs" "${node_trivial[@]}")

say "in-process runner overhead over a bare exec ($overhead_turns turns each)"
overhead=$(timeout 300 "$bin/drive" overhead --agent "$bin/trivial" -n "$overhead_turns")

stream_case() { # name profile
	local name=$1 p=$2
	say "throughput: $name ($stream_runs runs each)"
	hyper "$name" "$stream_runs" 1 \
		-n node "$node_cli --profile $p --prompt go --quiet" \
		-n agentbridge "$bin/agentbridge run --profile $p go" \
		-n drive "$bin/drive stream --profile $p"
	printf '%s %s %s\n' \
		"$(peak_rss_mib 3 "$node_cli" --profile "$p" --prompt go --quiet)" \
		"$(peak_rss_mib 3 "$bin/agentbridge" run --profile "$p" go)" \
		"$(peak_rss_mib 3 "$bin/drive" stream --profile "$p")" >"$res/$name.rss"
}
stream_case small "$prof/small.yaml"
stream_case big "$prof/big.yaml"

# Text payload per turn: "chunk N " for N < 1e6 is 12,888,890 bytes.
small_bytes=$(awk -v n="$small_n" 'BEGIN { b = 0; for (d = 1; d <= 7; d++) { lo = (d == 1) ? 0 : 10^(d-1); hi = 10^d; if (lo >= n) break; if (hi > n) hi = n; b += (hi - lo) * (d + 7) } print b }')
big_bytes=$((big_n * big_size))

fmt() { awk -v v="$1" -v d="${2:-1}" 'BEGIN { printf "%.*f", d, v }'; }
rate() { awk -v n="$1" -v ms="$2" -v div="$3" 'BEGIN { printf "%.2f", n / (ms / 1000) / div }'; }

read -r s_node_rss s_ab_rss s_drive_rss <"$res/small.rss"
read -r b_node_rss b_ab_rss b_drive_rss <"$res/big.rss"
t_bare=$(median_ms trivial 0) t_ab=$(median_ms trivial 1) t_node=$(median_ms trivial 2)
s_node=$(median_ms small 0) s_ab=$(median_ms small 1) s_drive=$(median_ms small 2)
b_node=$(median_ms big 0) b_ab=$(median_ms big 1) b_drive=$(median_ms big 2)

cat <<EOF | tee "$res/summary.md"
Run $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), Linux $(uname -r), $(go version | cut -d' ' -f3), node $node_version, agentproc $(jq -r .version "$cache/npm/node_modules/agentproc/package.json"), hyperfine $(hyperfine --version | cut -d' ' -f2).

| Trivial turn (whole process) | median wall | peak RSS |
|---|---:|---:|
| bare exec of the agent | $(fmt "$t_bare" 2) ms | $rss_bare MiB |
| \`agentbridge run\` | $(fmt "$t_ab" 2) ms | $rss_ab MiB |
| \`agentproc\` (Node) | $(fmt "$t_node" 1) ms | $rss_node MiB |
| agentbridge / Node | $(awk -v a="$t_ab" -v b="$t_node" 'BEGIN { printf "%.3f", a / b }') | $(awk -v a="$rss_ab" -v b="$rss_node" 'BEGIN { printf "%.3f", a / b }') |

In-process (\`drive overhead\`, agentproc.Run vs os/exec of the same agent, alternating): $overhead

| Throughput (whole process, median of $stream_runs) | 1,000,000 small partials | | | 100 × 1 MiB partials | | |
|---|---:|---:|---:|---:|---:|---:|
| | wall | events/s | peak RSS | wall | MB/s (text) | peak RSS |
| \`agentproc\` (Node) | $(fmt "$s_node" 0) ms | $(rate $small_n "$s_node" 1e6) M | $s_node_rss MiB | $(fmt "$b_node" 0) ms | $(rate $big_bytes "$b_node" 1e6) | $b_node_rss MiB |
| \`agentbridge run\` (stdout to /dev/null) | $(fmt "$s_ab" 0) ms | $(rate $small_n "$s_ab" 1e6) M | $s_ab_rss MiB | $(fmt "$b_ab" 0) ms | $(rate $big_bytes "$b_ab" 1e6) | $b_ab_rss MiB |
| agentproc.Run + OnEvent (\`drive stream\`) | $(fmt "$s_drive" 0) ms | $(rate $small_n "$s_drive" 1e6) M | $s_drive_rss MiB | $(fmt "$b_drive" 0) ms | $(rate $big_bytes "$b_drive" 1e6) | $b_drive_rss MiB |

Text payload: $small_bytes bytes (small), $big_bytes bytes (big); MB = 10^6 bytes. Raw data: $res
EOF
rm -f "$res/rss.tmp" "$res/rss.err"
