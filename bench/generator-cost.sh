#!/usr/bin/env bash
# The load generator's CPU cost per request, corebench beside wrk, ab and
# h2load, measured by ../shared/bench/generator-cost: one nginx worker on
# CPU 0, each generator on CPU 1, the server counting the requests. Run at
# 50 and at 500 keep-alive connections, corebench on each of its transports
# (--io uring and --io epoll) with its defaults (--linger auto: both hold
# responses where a probe shows it costs the server no load), each without
# holding (--linger off, which on epoll wakes as wrk does), and io_uring
# always holding (--linger 10). Goals: vs_wrk <= 0.80 on io_uring, <= 1.00
# on epoll (bench/generator_cost.py prints the geometric mean's 90% interval
# against them, and in how many runs the defaults' probes held).
#
#   bench/generator-cost.sh [SECONDS] [ROUNDS] [CONNECTIONS...]
#   (5 s, 7 rounds, 50 and 500 connections by default)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
rounds=${2:-7}
shift $(($# < 2 ? $# : 2))
conns_list=${*:-50 500}
tool=${GENERATOR_COST:-../shared/bench/generator-cost}
[ -x "$tool" ] || { echo "generator-cost: $tool not found (set GENERATOR_COST)" >&2; exit 2; }
cb="$(pwd)/.venv/bin/corebench"
[ -x "$cb" ] || { echo "generator-cost: $cb missing: run make build" >&2; exit 2; }
ulimit -n 65536 2>/dev/null || echo "# could not raise the open-file limit: $(ulimit -n)" >&2
for conns in $conns_list; do
  "$(pwd)/.venv/bin/python" bench/generator_cost.py "$tool" "$seconds" "$rounds" "$conns" \
    "corebench-uring=$cb load -k --io uring --threads 1 -c {conns} -t {seconds}s {url}" \
    "corebench-epoll=$cb load -k --io epoll --threads 1 -c {conns} -t {seconds}s {url}" \
    "corebench-uring-off=$cb load -k --io uring --linger off --threads 1 -c {conns} -t {seconds}s {url}" \
    "corebench-epoll-off=$cb load -k --io epoll --linger off --threads 1 -c {conns} -t {seconds}s {url}" \
    "corebench-uring-10=$cb load -k --io uring --linger 10 --threads 1 -c {conns} -t {seconds}s {url}"
  echo
done
