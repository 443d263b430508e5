#!/usr/bin/env bash
# The language models' training windows built on a GPU host, in the background, from the carry
# folder C (gpu_train.sh says what it holds): /tmp/zoo/stream.npy and, once whole, logs/stream.json
# (its sha256 and sources). Idempotent: a host where they are built, or being built, is left as it is,
# so an earlier device call on the same (warm) host can start the build for a later one. The builder
# runs in a session of its own (it outlives the call that started it), at the lowest priority unless
# NICE says otherwise (whatever else the call runs keeps the cores).
#   bash training/gpu_stream.sh .zoo/carry [WINDOWS] [LENGTH] [SEED]
set -uo pipefail
C=$1; WINDOWS=${2:-128000}; LENGTH=${3:-1024}; SEED=${4:-0}; W=/tmp/zoo; mkdir -p $W/logs $W/models
if [ -s $W/logs/stream.json ]; then echo "windows already built: $W/stream.npy"; exit 0; fi
if [ -f $W/logs/stream.pid ] && kill -0 "$(cat $W/logs/stream.pid)" 2>/dev/null; then
  echo "windows being built (pid $(cat $W/logs/stream.pid))"; exit 0; fi
mkdir -p $W/data $W/code $W/text
tar -xJf "$C/data.tar.xz" -C $W/data && tar -xJf "$C/stdlib.tar.xz" -C $W/code && tar -xJf "$C/text.tar.xz" -C $W/text || exit 1
setsid nice -n ${NICE:-19} bash -c "python3 -m training.corpus --data-dir $W/data --code-dir $W/code/stdlib --text-dir $W/text \
  --tokenizer path_eval/zoo/models/rope --length $LENGTH --windows $WINDOWS --seed $SEED --out $W/stream.npy \
  > $W/logs/stream.part 2> $W/logs/stream.err && mv $W/logs/stream.part $W/logs/stream.json" < /dev/null &
echo $! > $W/logs/stream.pid
echo "building $WINDOWS windows of $LENGTH tokens (pid $!)"
