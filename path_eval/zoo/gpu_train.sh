#!/usr/bin/env bash
# The zoo's GPU run (the H200 device tool), from a folder Z holding path_eval/, kernels/, tokenizer/,
# data.tar.xz (the raw training text) and stdlib.tar.xz (the code source), with the wheels installed
# and PYTHONPATH set, run from inside Z (so that Z's path_eval is the one imported): build the
# windows, train every variant as its own process on the one GPU (a tiny model leaves most of an
# H200 idle, and a failing kernel poisons only its own CUDA context), tar the models, check them
# against fla / transformers, tar the logs. At most 8 files come back from $OUT: run.log (tee'd by
# the caller), models_lm.tar, models_flipflop.tar, logs.tar (refreshed while the run goes on).
#   cd .zoo && STEPS=800 FF_STEPS=2000 DEADLINE_S=330 REVISION=abc1234 bash path_eval/zoo/gpu_train.sh $PWD
# PARITY_ONLY=1 (STEPS and FF_STEPS still set) checks models carried in as Z/models_lm.tar, Z/models_flipflop.tar;
# PARITY_S=0 skips the check. LM_SEEDS (default 0) and FF_SEEDS (default 0) train each variant once per seed (seed 0
# keeps the shipped names: rope, flipflop_rope_seed0; others get _seedN); FF_EXTRA="rope:6000:1 ..." adds flip-flop runs
# of one variant at another step count (a longer budget, for a convergence curve), named flipflop_rope_seed1_steps6000.
set -uo pipefail
Z=$1; OUT=${OUT:-/tmp/out}; W=/tmp/zoo; mkdir -p $W/logs $W/models
STEPS=${STEPS:?}; FF_STEPS=${FF_STEPS:?}; BATCH=${BATCH:-128}; FF_BATCH=${FF_BATCH:-128}
FF_SEEDS=${FF_SEEDS:-0}; LM_SEEDS=${LM_SEEDS:-0}; FF_EXTRA=${FF_EXTRA:-}; REVISION=${REVISION:-unknown}; DEADLINE_S=${DEADLINE_S:-330}
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
for seed in $LM_SEEDS; do
  for v in rope fox path path_fox; do
    name=$v; [ "$seed" = 0 ] || name=${v}_seed$seed
    python3 -m path_eval.zoo.train --variant $v $common --seed $seed --out $W/models/$name > $W/logs/$name.log 2>&1 &
    pids+=($!)
  done
done
flipflop() {  # variant steps seed name
  python3 -m path_eval.zoo.train --task flipflop --variant $1 --steps $2 --batch $FF_BATCH --lr 1e-3 \
    --seed $3 --log-every 100 --eval-every ${FF_EVAL:-250} --deadline-s $DEADLINE_S --revision $REVISION \
    --out $W/models/$4 > $W/logs/$4.log 2>&1 &
  pids+=($!)
}
for seed in $FF_SEEDS; do
  for v in rope fox path path_fox; do flipflop $v $FF_STEPS $seed flipflop_${v}_seed$seed; done
done
for run in $FF_EXTRA; do
  IFS=: read -r v steps seed <<< "$run"
  flipflop $v $steps $seed flipflop_${v}_seed${seed}_steps$steps
done
wait "${pids[@]}"
stamp "trained"
for f in $W/logs/*.log; do echo "== $f"; grep -E '"step": (1|10),' "$f" | cut -c1-200; tail -1 "$f" | cut -c1-900; done
(cd $W/models && tar -cf "$OUT/models_lm.tar" --exclude='flipflop_*' .; tar -cf "$OUT/models_flipflop.tar" flipflop_*)
fi
[ "${PARITY_S:-150}" = 0 ] || { stamp "parity, one process a model"
pids=()
for m in $W/models/*; do
  timeout ${PARITY_S:-150} python3 -m path_eval.zoo.parity --out $W/logs/parity_$(basename $m).json $m > $W/logs/parity_$(basename $m).log 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"
cat $W/logs/parity_*.log | grep -v "^\s*$" | cut -c1-400; }
kill $progress; tar -cf $OUT/logs.tar -C $W logs
ls -la "$OUT"; stamp "done"
