#!/usr/bin/env bash
# The zoo's language models trained on one GPU (the H200 device tool), run from the repository root
# with the wheels installed and PYTHONPATH holding the root. C is a folder holding the training
# text as three archives: data.tar.xz (gutenberg_books/, babi en-10k *_train.txt,
# paul_graham_essays/PaulGrahamEssays/ of the shared data folder), stdlib.tar.xz (stdlib/: the
# standard library's .py files that corpus.code_files selects) and text.tar.xz (docs/: the prose
# `python -m training.text_sources` fetched).
#
# The windows are built (training/gpu_stream.sh, unless an earlier call on the same host started
# them) while every variant's process compiles its kernels (each then waits for them); the four
# variants train at once as processes of their own (a small model leaves most of an H200 idle, and
# a failing kernel poisons only its own CUDA context), on the same windows in the same order.
# Once the windows are there, every process times a few steps while all the others do and all train
# the same number of steps (training/agreement.py): STEPS, or the most the slowest fits before
# DEADLINE_S, so every variant (and replica) sees the same tokens; the cards keep the measurements.
# REPLICAS=2 trains every variant twice with the same command, the second set into retrain1/ (what
# a retrain gives: GPU kernels do not add in a fixed order). At most 8 files come back from $OUT:
# one tar per variant (its replicas too), logs.tar (refreshed while the run goes on) and the run log
# the caller tees.
#   STEPS=2000 BATCH=64 LENGTH=1024 REVISION=abc1234 bash training/gpu_train.sh .zoo/carry
set -uo pipefail
C=$1; OUT=${OUT:-/tmp/out}; W=/tmp/zoo; mkdir -p $W/logs $W/models
STEPS=${STEPS:?}; BATCH=${BATCH:-64}; LENGTH=${LENGTH:-1024}; SEED=${SEED:-0}
REVISION=${REVISION:-unknown}; DEADLINE_S=${DEADLINE_S:-520}; VARIANTS=${VARIANTS:-rope fox path path_fox}
REPLICAS=${REPLICAS:-1}
export OMP_NUM_THREADS=2
stamp() { echo "[$(date +%T)] $*"; }
(while sleep 20; do tar -cf $OUT/logs.tar -C $W logs 2>/dev/null; done) &
progress=$!
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, triton, transformers, fla, tokenizers; print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__, 'fla', fla.__version__, 'tokenizers', tokenizers.__version__)"
stamp "the training windows ($((STEPS * BATCH)) of $LENGTH tokens), compiling beside them"
NICE=0 bash training/gpu_stream.sh "$C" $((STEPS * BATCH)) $LENGTH $SEED || exit 1
tokenizer=path_eval/zoo/models/rope  # the zoo's BPE (every language model's folder holds the same one)
members=$((REPLICAS * $(echo $VARIANTS | wc -w))); rm -rf $W/agree  # a fresh meeting for this run's models
pids=()
for replica in $(seq 1 $REPLICAS); do
  folder=$W/models; [ $replica = 1 ] || folder=$W/models/retrain$((replica - 1))
  for v in $VARIANTS; do
    python3 -m training.train --variant $v --steps $STEPS --batch $BATCH --length $LENGTH --seed $SEED \
      --deadline-s $DEADLINE_S --agree-dir $W/agree --agree-members $members --revision $REVISION \
      --tokenizer $tokenizer --stream $W/stream.npy \
      --stream-info $W/logs/stream.json --wait-for-stream --out $folder/$v > $W/logs/${v}_$replica.log 2>&1 &
    pids+=($!)
  done
done
wait "${pids[@]}"
cat $W/logs/stream.json 2>/dev/null || { stamp "building the windows failed"; tail -5 $W/logs/stream.err; }
stamp "trained"
for f in $W/logs/*.log; do echo "== $f"; grep -E '"(step": (1|10),|compiled_s|agreed_steps)' "$f" | cut -c1-200; tail -1 "$f" | cut -c1-900; done
for v in $VARIANTS; do (cd $W/models && tar -cf "$OUT/$v.tar" $v $(ls -d retrain*/$v 2>/dev/null)); done
kill $progress; tar -cf $OUT/logs.tar -C $W logs
ls -la "$OUT"; stamp "done"
