#!/usr/bin/env bash
# The zoo's GPU run (the H200 device tool), from a folder Z holding path_eval/, kernels/, tokenizer/,
# data.tar.xz (the raw training text) and stdlib.tar.xz (the code source), with the wheels installed
# and PYTHONPATH set, run from inside Z (so that Z's path_eval is the one imported): build the
# windows, train every variant as its own process on the one GPU (a tiny model leaves most of an
# H200 idle, and a failing kernel poisons only its own CUDA context), tar the models, check them
# against fla / transformers, tar the logs. At most 8 files come back from $OUT: run.log (tee'd by
# the caller), models_lm.tar, models_flipflop.tar, logs.tar (refreshed while the run goes on).
#   cd .zoo && STEPS=800 FF_STEPS=2000 DEADLINE_S=330 REVISION=abc1234 bash path_eval/zoo/gpu_train.sh $PWD
# PARITY_ONLY=1 (STEPS and FF_STEPS still set) checks models carried in as Z/models_lm.tar, Z/models_flipflop.tar.
set -uo pipefail
Z=$1; OUT=${OUT:-/tmp/out}; W=/tmp/zoo; mkdir -p $W/logs $W/models
STEPS=${STEPS:?}; FF_STEPS=${FF_STEPS:?}; BATCH=${BATCH:-128}; FF_BATCH=${FF_BATCH:-128}
FF_SEEDS=${FF_SEEDS:-0}; REVISION=${REVISION:-unknown}; DEADLINE_S=${DEADLINE_S:-330}
export OMP_NUM_THREADS=2
stamp() { echo "[$(date +%T)] $*"; }
(while sleep 20; do tar -cf $OUT/logs.tar -C $W logs 2>/dev/null; done) &
progress=$!
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, triton, transformers, fla, tokenizers; print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__, 'fla', fla.__version__, 'tokenizers', tokenizers.__version__)"
if [ -n "${PARITY_ONLY:-}" ]; then  # check models trained earlier, carried as Z/models_*.tar
  for t in "$Z"/models_*.tar; do tar -xf "$t" -C $W/models; done
else
stamp "unpacking the training text"
mkdir -p $W/data $W/code && tar -xJf "$Z/data.tar.xz" -C $W/data && tar -xJf "$Z/stdlib.tar.xz" -C $W/code
if [ -n "${RETRAIN_TOKENIZER:-}" ]; then
  stamp "retraining the tokenizer (its sha256 must equal the shipped one)"
  python3 -m path_eval.zoo.tokenizer --data-dir $W/data --code-dir $W/code/stdlib --out $W/tokenizer_again > $W/logs/tokenizer_again.json
fi
stamp "building $((STEPS * BATCH)) windows"
python3 -m path_eval.zoo.corpus --data-dir $W/data --code-dir $W/code/stdlib --tokenizer "$Z/tokenizer" \
  --windows $((STEPS * BATCH)) --out $W/stream.npy > $W/logs/stream.json || exit 1
cat $W/logs/stream.json
stamp "training"
common="--steps $STEPS --batch $BATCH --deadline-s $DEADLINE_S --revision $REVISION --tokenizer $Z/tokenizer --stream $W/stream.npy --stream-info $W/logs/stream.json"
pids=()
for v in rope fox path path_fox; do
  python3 -m path_eval.zoo.train --variant $v $common --out $W/models/$v > $W/logs/$v.log 2>&1 &
  pids+=($!)
done
for seed in $FF_SEEDS; do
  for v in rope fox path path_fox; do
    python3 -m path_eval.zoo.train --task flipflop --variant $v --steps $FF_STEPS --batch $FF_BATCH --lr 1e-3 \
      --seed $seed --log-every 100 --eval-every ${FF_EVAL:-250} --deadline-s $DEADLINE_S --revision $REVISION \
      --out $W/models/flipflop_${v}_seed$seed > $W/logs/flipflop_${v}_seed$seed.log 2>&1 &
    pids+=($!)
  done
done
wait "${pids[@]}"
stamp "trained"
for f in $W/logs/*.log; do echo "== $f"; grep -E '"step": (1|10),' "$f" | cut -c1-200; tail -1 "$f" | cut -c1-900; done
(cd $W/models && tar -cf "$OUT/models_lm.tar" rope fox path path_fox; tar -cf "$OUT/models_flipflop.tar" flipflop_*)
fi
stamp "parity, one process a model"
pids=()
for m in $W/models/*; do
  timeout ${PARITY_S:-150} python3 -m path_eval.zoo.parity --out $W/logs/parity_$(basename $m).json $m > $W/logs/parity_$(basename $m).log 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"
cat $W/logs/parity_*.log | grep -v "^\s*$" | cut -c1-400
kill $progress; tar -cf $OUT/logs.tar -C $W logs
ls -la "$OUT"; stamp "done"
