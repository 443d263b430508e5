#!/usr/bin/env bash
# The state-tracking diagnostics on one GPU (the H200 device tool), run from the repository root with
# the wheels installed and PYTHONPATH holding the root, within one device call (BUDGET_S, the call's
# limit less a margin). ONLY=a5 or ONLY=mqrar trains one task's models (a call each, when one call
# cannot hold both); empty trains both. In order:
#   - the flip-flop part of the `state_tracking` suite on the zoo's flip-flop models, in the
#     background from the start (it needs no training);
#   - MQRAR only, MQRAR_HEADS=2: a check that fla's PaTH trains at head dim 128 (the paper's 2 heads
#     of 128), else 4 heads of 64, a departure every MQRAR card names; not with STEPS, whose calls
#     split one plan and keep MQRAR_HEADS throughout (a fallback in one call would change the shape
#     mid-plan; the check took 57 s of a fresh H200's call);
#   - a timing trial of each task and variant (WORKERS processes at once, all training until
#     TRIAL_DEADLINE_S, so that every timed step shares the GPU as the training will);
#   - every model, the recipe's steps scaled by one factor to fit what the budget leaves
#     (training/diagnostics.py; every variant keeps one budget);
#   - the suite's A5 and MQRAR-N tasks on them (A5 in two processes: depths 1-2, 3-4), and the report.
# Training processes pin each autotuned fla kernel to one launch configuration (training/autotune.py).
# The weights stay on the host (about 400 MB). Back in $OUT: trial.json, cards.tar (every model's
# model_card.json and README.md), logs.tar, runs.tar.xz (the run folders with their per-sample logs,
# without lm-eval's copy and the resume cache: training/study.py compacts them for git), report.md,
# figure2.png and the run log the caller tees. SEEDS=0 (or 1, 2; comma-separated) trains those seeds'
# models alone, every variant and depth of each, and STEPS=N trains every model N steps in place of
# the fitted budget (no trial then): the plan split over calls that share one budget. Calls one
# after another on a warm host leave their models side by side, and each call's suite part scores
# every model there so far (a new run each time). A suite run stopped by the budget resumes with the
# same command on the same host (RESUME=1 skips the training and keeps the run). PAUSE_AFTER=N (with
# STEPS) has each model pause after N steps in a call, its state kept on the host: the same command
# again, on the same warm host, goes on from there (a budget longer than one call; MQRAR's 4000
# steps take about 20 minutes a seed), and scores only the models that have finished. NS=1 (or 2, 3, 4;
# comma-separated) trains those MQRAR-N's models alone, every variant of each: a call that finishes its
# models, where a seed's are more than a call holds.
#   REVISION=$(git rev-parse --short HEAD) ONLY=a5 bash training/gpu_diagnostics.sh | tee $OUT/run.log
set -uo pipefail
shopt -s nullglob  # a part whose models this call did not train (SEEDS, ONLY) is left out, not globbed literally
OUT=${OUT:-/tmp/out}; W=/tmp/diagnostics; RUN=/tmp/state_tracking; mkdir -p $W $RUN
REVISION=${REVISION:-unknown}; WORKERS=${WORKERS:-12}; BUDGET_S=${BUDGET_S:-570}; SUITE_S=${SUITE_S:-70}
MQRAR_HEADS=${MQRAR_HEADS:-2}; RESUME=${RESUME:-0}; ONLY=${ONLY:-}; TRIAL_DEADLINE_S=${TRIAL_DEADLINE_S:-60}
SEEDS=${SEEDS:-0,1,2}; NS=${NS:-1,2,3,4}; STEPS=${STEPS:-}; PAUSE_AFTER=${PAUSE_AFTER:-}
case "$ONLY" in ""|a5|mqrar) ;; *) echo "ONLY=$ONLY: give a5, mqrar or nothing (both)"; exit 2;; esac
[ -z "$PAUSE_AFTER" ] || [ -n "$STEPS" ] || {
  echo "PAUSE_AFTER=$PAUSE_AFTER needs STEPS (the budget it splits)"; exit 2; }
only="${ONLY:+--only $ONLY} --seeds $SEEDS --ns $NS"
export OMP_NUM_THREADS=1 TRITON_CACHE_AUTOTUNING=1  # our kernels tune once, every suite process reads it
# the suite's records name REVISION too: the host's copy of .git can lag behind the files it was sent
[ "$REVISION" = unknown ] || export PATH_EVAL_GIT_REVISION=$REVISION
stamp() { echo "[$(date +%T) +${SECONDS}s] $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "$ONLY" != mqrar ]; then
  stamp "flip-flop on the zoo's flip-flop models, in the background"
  timeout $((BUDGET_S - 20)) python3 eval.py run --suite state_tracking --model zoo:flipflop_rope zoo:flipflop_fox \
    zoo:flipflop_path zoo:flipflop_path_fox --device cuda --batch-size 64 --out $RUN/flipflop --quiet \
    > $W.run_flipflop.log 2>&1 &
  flipflop=$!
fi
if [ -f $W/mqrar_heads ]; then  # an earlier call on this host chose it: its paused models keep it
  MQRAR_HEADS=$(cat $W/mqrar_heads); stamp "MQRAR with $MQRAR_HEADS heads, as an earlier call on this host"
elif [ -n "$STEPS" ] && [ "$ONLY" != a5 ]; then  # one plan over calls keeps one shape: a fallback here would change it
  stamp "MQRAR with $MQRAR_HEADS heads, as every call of a STEPS plan (no head-dim check)"
elif [ "$RESUME" = 0 ] && [ "$ONLY" != a5 ] && [ "$MQRAR_HEADS" = 2 ]; then
  stamp "fla's PaTH at MQRAR's shape (2 heads of 128): one forward and backward"
  if ! timeout 120 python3 - > $W.probe.log 2>&1 <<'PY'
import torch
from training.train import SHAPES, build_model, labelled_loss
model = build_model("path", 8194, bos=1, eos=2, pad=0, **SHAPES["mqrar"]).cuda()
ids = torch.randint(3, 8194, (8, 769), device="cuda")
labelled_loss(model, ids[:, :-1], ids[:, 1:]).backward()
torch.cuda.synchronize()
print("PaTH at head dim 128: forward and backward ran")
PY
  then MQRAR_HEADS=4; tail -3 $W.probe.log; stamp "head dim 128: no forward and backward within 120 s; MQRAR with 4 heads of 64"
  else cat $W.probe.log; fi
fi
[ "$ONLY" = a5 ] || echo $MQRAR_HEADS > $W/mqrar_heads
if [ "$RESUME" = 0 ] && [ -z "$STEPS" ]; then
  stamp "trial: every task and variant training at once until ${TRIAL_DEADLINE_S}s"
  timeout $((TRIAL_DEADLINE_S + 120)) python3 -m training.diagnostics trial $only --trial-s $TRIAL_DEADLINE_S --workers $WORKERS \
    --mqrar-heads $MQRAR_HEADS --out $W 2> $W.trial.err | tail -1 > $OUT/trial.json
  cat $OUT/trial.json; [ -s $OUT/trial.json ] || { tail -20 $W.trial.err; tar -cf $OUT/logs.tar -C $W/trial logs; exit 1; }
fi
if [ "$RESUME" = 0 ]; then
  # what is left once the suite's share is set aside; each worker's deadline a little inside it
  left=$((BUDGET_S - SECONDS - SUITE_S - 15)); fit=$((left * 5 / 6))
  if [ -n "$STEPS" ]; then budget="--steps $STEPS${PAUSE_AFTER:+ --pause-after $PAUSE_AFTER}"
    stamp "training every model ${STEPS} steps${PAUSE_AFTER:+, ${PAUSE_AFTER} a call} (deadline ${left}s)"
  else budget="--fit $OUT/trial.json --fit-s $fit"; stamp "training every model, fitted to ${fit}s (deadline ${left}s)"; fi
  timeout $((left + 20)) python3 -m training.diagnostics train $only --workers $WORKERS --out $W/models \
    --revision $REVISION --mqrar-heads $MQRAR_HEADS $budget --deadline-s $left
  stamp "trained: exit $?"
  (cd $W/models && tar -cf $OUT/cards.tar */model_card.json */README.md 2>/dev/null)  # none while all pause
  tar -cf $OUT/logs.tar -C $W/models logs
fi
suite=$((BUDGET_S - SECONDS - 15)); parts=()
stamp "the state_tracking suite on the trained models (${suite}s)"
# A5's 48 models in two processes (depths 1-2, 3-4), MQRAR's in one
for part in a5_L12 a5_L34 mqrar; do
  task=${part%%_*}; [ -n "$ONLY" ] && [ "$ONLY" != $task ] && continue
  case $part in a5_L12) models=($W/models/a5_*_L1_* $W/models/a5_*_L2_*); tasks=a5;;
    a5_L34) models=($W/models/a5_*_L3_* $W/models/a5_*_L4_*); tasks=a5;;
    mqrar) models=($W/models/mqrar*); tasks=mqrar_1,mqrar_2,mqrar_3,mqrar_4;; esac
  finished=(); for model in "${models[@]}"; do
    [ -f $model/model_card.json ] && [ ! -f $model/resume.pt ] && finished+=($model); done
  models=("${finished[@]}")  # a paused model (PAUSE_AFTER) is scored once it finishes
  [ ${#models[@]} -gt 0 ] || { stamp "$part: no finished models"; continue; }
  # a later call on the same (warm) host scores every model trained there so far: a new run, unless resuming
  [ "$RESUME" = 1 ] || rm -rf $RUN/$part
  timeout $suite python3 eval.py run --suite state_tracking --model "${models[@]}" --tasks $tasks --device cuda \
    --batch-size 64 --out $RUN/$part --quiet > $W.run_$part.log 2>&1 &
  parts+=("$part:$!")
done
[ -n "${flipflop:-}" ] && parts+=("flipflop:$flipflop")
for part in "${parts[@]}"; do wait ${part#*:}; stamp "${part%%:*}: exit $?"; tail -3 $W.run_${part%%:*}.log; done
python3 eval.py report $(for part in "${parts[@]}"; do echo $RUN/${part%%:*}; done) --layout state_tracking \
  --format markdown --plot $W/plots > $OUT/report.md
cp $W/plots/state_tracking_figure2.png $OUT/figure2.png
XZ_OPT=-T0 tar -cJf $OUT/runs.tar.xz -C $RUN --exclude=lm_eval --exclude=resume .
tail -25 $OUT/report.md
ls -la $OUT; stamp "done"
