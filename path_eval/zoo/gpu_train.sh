#!/usr/bin/env bash
# The zoo's GPU run (the H200 device tool), from a folder Z holding path_eval/, kernels/, tokenizer/,
# data.tar.xz (the raw training text) and stdlib.tar.xz (the code source), with the wheels installed
# and PYTHONPATH set: build the windows, train every variant as its own process on the one GPU
# (a tiny model leaves most of an H200 idle, and a failing kernel poisons only its own CUDA
# context), check the final models against fla / transformers, tar models and logs into $OUT.
#   STEPS=4000 FF_STEPS=6000 REVISION=abc1234 bash .zoo/path_eval/zoo/gpu_train.sh .zoo
set -uo pipefail
Z=$1; OUT=${OUT:-/tmp/out}; W=/tmp/zoo; mkdir -p "$OUT/logs" $W/models
STEPS=${STEPS:?}; FF_STEPS=${FF_STEPS:?}; BATCH=${BATCH:-64}; FF_BATCH=${FF_BATCH:-64}
FF_SEEDS=${FF_SEEDS:-0 1}; REVISION=${REVISION:-unknown}
stamp() { echo "[$(date +%T)] $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, triton, transformers, fla, tokenizers; print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__, 'fla', fla.__version__, 'tokenizers', tokenizers.__version__)"
stamp "unpacking the training text"
mkdir -p $W/data $W/code && tar -xJf "$Z/data.tar.xz" -C $W/data && tar -xJf "$Z/stdlib.tar.xz" -C $W/code
stamp "retraining the tokenizer (its sha256 must equal the shipped one)"
python3 -m path_eval.zoo.tokenizer --data-dir $W/data --code-dir $W/code/stdlib --out $W/tokenizer_again > "$OUT/tokenizer_again.json" 2> "$OUT/logs/tokenizer_again.log" &
stamp "building $((STEPS * BATCH)) windows"
python3 -m path_eval.zoo.corpus --data-dir $W/data --code-dir $W/code/stdlib --tokenizer "$Z/tokenizer" \
  --windows $((STEPS * BATCH)) --out $W/stream.npy > "$OUT/stream.json" || exit 1
cat "$OUT/stream.json"
stamp "training"
common="--steps $STEPS --batch $BATCH --revision $REVISION --tokenizer $Z/tokenizer --stream $W/stream.npy --stream-info $OUT/stream.json"
for v in rope fox path path_fox; do
  python3 -m path_eval.zoo.train --variant $v $common --out $W/models/$v > "$OUT/logs/$v.log" 2>&1 &
done
for seed in $FF_SEEDS; do
  for v in rope fox path path_fox; do
    python3 -m path_eval.zoo.train --task flipflop --variant $v --steps $FF_STEPS --batch $FF_BATCH --lr 1e-3 \
      --seed $seed --log-every 100 --eval-every ${FF_EVAL:-500} --revision $REVISION --out $W/models/flipflop_${v}_seed$seed \
      > "$OUT/logs/flipflop_${v}_seed$seed.log" 2>&1 &
  done
done
wait
stamp "trained"; nvidia-smi --query-gpu=memory.used --format=csv,noheader
for f in "$OUT"/logs/*.log; do echo "== $f"; tail -2 "$f" | cut -c1-600; done
stamp "parity"
timeout ${PARITY_S:-150} python3 -m path_eval.zoo.parity --out "$OUT/parity.json" $W/models/* 2>&1 | tee "$OUT/logs/parity.log"
cat "$OUT/tokenizer_again.json"
# at most 8 files of 16 MiB come back: the language models, the flip-flop models, the logs
(cd $W/models && tar -cf "$OUT/models_lm.tar" rope fox path path_fox && tar -cf "$OUT/models_flipflop.tar" flipflop_*)
mkdir -p $W/logs && mv "$OUT"/logs "$OUT"/*.json $W/logs/ && tar -cf "$OUT/logs.tar" -C $W logs
ls -la "$OUT"; stamp "done"
