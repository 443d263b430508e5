#!/usr/bin/env bash
# The state-tracking diagnostics on one GPU (the H200 device tool), run from the repository root with
# the wheels installed and PYTHONPATH holding the root, within one device call (BUDGET_S, the call's
# 600 s less a margin): a check that fla's PaTH trains at head dim 128 (MQRAR's 2 heads of 128; else
# 4 heads of 64, a departure every MQRAR card names; MQRAR_HEADS=4 skips the check), a timing trial
# of every task and variant, the models trained with the recipe's steps scaled by one factor to fit
# what the budget leaves (training/diagnostics.py; every variant keeps one budget), the
# `state_tracking` suite run on them and on the zoo's flip-flop models (two processes: the A5 models,
# the rest), and its report. The weights stay on the host (about 400 MB); what comes back in $OUT:
# trial.json, cards.tar (every model's model_card.json and README.md), logs.tar, state_tracking.tgz
# (the runs' compact copies: training/study.py), report.md, figure2.png and the run log the caller
# tees. A suite run stopped by the budget resumes with the same command on the same host (RESUME=1
# skips the training).
#   REVISION=$(git rev-parse --short HEAD) bash training/gpu_diagnostics.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/diagnostics; RUN=/tmp/state_tracking; mkdir -p $W
REVISION=${REVISION:-unknown}; WORKERS=${WORKERS:-12}; BUDGET_S=${BUDGET_S:-570}; SUITE_S=${SUITE_S:-130}
MQRAR_HEADS=${MQRAR_HEADS:-2}; RESUME=${RESUME:-0}
# autotuning results on disk: the trial's processes tune each kernel once, the workers read them
export OMP_NUM_THREADS=1 TRITON_CACHE_AUTOTUNING=1
stamp() { echo "[$(date +%T) +${SECONDS}s] $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "$RESUME" = 0 ] && [ "$MQRAR_HEADS" = 2 ]; then
  stamp "fla's PaTH at MQRAR's shape (2 heads of 128): one forward and backward"
  if ! timeout 120 python3 - > $W.probe.log 2>&1 <<'PY'
import torch
from training.train import SHAPES, build_model
model = build_model("path", 8194, bos=1, eos=2, pad=0, **SHAPES["mqrar"]).cuda()
ids = torch.randint(3, 8194, (8, 768), device="cuda")
with torch.autocast("cuda", dtype=torch.bfloat16):
    model(input_ids=ids).logits.float().mean().backward()
torch.cuda.synchronize()
print("PaTH at head dim 128: forward and backward ran")
PY
  then MQRAR_HEADS=4; tail -3 $W.probe.log; stamp "head dim 128: no forward and backward within 120 s; MQRAR with 4 heads of 64"
  else cat $W.probe.log; fi
fi
if [ "$RESUME" = 0 ]; then
  stamp "trial: a few steps of each task and variant, at once"
  timeout ${TRIAL_S:-240} python3 -m training.diagnostics trial --workers $WORKERS --mqrar-heads $MQRAR_HEADS --out $W \
    2> $W.trial.err | tail -1 > $OUT/trial.json
  cat $OUT/trial.json; [ -s $OUT/trial.json ] || { tail -20 $W.trial.err; tar -cf $OUT/logs.tar -C $W/trial logs; exit 1; }
  # what is left once the suite's share is set aside; each worker's deadline a little inside it
  left=$((BUDGET_S - SECONDS - SUITE_S - 15)); fit=$((left * 5 / 6))
  stamp "training every model, fitted to ${fit}s (deadline ${left}s)"
  timeout $((left + 20)) python3 -m training.diagnostics train --workers $WORKERS --out $W/models \
    --revision $REVISION --mqrar-heads $MQRAR_HEADS --fit $OUT/trial.json --fit-s $fit --deadline-s $left
  stamp "trained: exit $?"
  (cd $W/models && tar -cf $OUT/cards.tar */model_card.json */README.md); tar -cf $OUT/logs.tar -C $W/models logs
fi
stamp "the state_tracking suite: two processes, the A5 models and the rest"
suite=$((BUDGET_S - SECONDS - 15))
timeout $suite python3 eval.py run --suite state_tracking --model $W/models/a5_* --tasks a5 --device cuda \
  --batch-size 64 --out $RUN/a5 --quiet > $W.run_a5.log 2>&1 &
a5=$!
timeout $suite python3 eval.py run --suite state_tracking --model $W/models/mqrar* zoo:flipflop_rope zoo:flipflop_fox \
  zoo:flipflop_path zoo:flipflop_path_fox --device cuda --batch-size 64 --out $RUN/mqrar_flipflop --quiet \
  > $W.run_rest.log 2>&1
stamp "MQRAR and flip-flop: exit $?"; tail -3 $W.run_rest.log
wait $a5; stamp "A5: exit $?"; tail -3 $W.run_a5.log
python3 eval.py report $RUN/a5 $RUN/mqrar_flipflop --layout state_tracking --format markdown --plot $W/plots > $OUT/report.md
cp $W/plots/state_tracking_figure2.png $OUT/figure2.png
rm -rf /tmp/state_tracking_compact; for part in a5 mqrar_flipflop; do
  python3 -m training.study $RUN/$part /tmp/state_tracking_compact/$part; done
tar -czf $OUT/state_tracking.tgz -C /tmp state_tracking_compact
tail -15 $OUT/report.md
ls -la $OUT; stamp "done"
