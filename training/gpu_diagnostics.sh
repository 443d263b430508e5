#!/usr/bin/env bash
# The state-tracking diagnostics on one GPU (the H200 device tool), run from the repository root with
# the wheels installed and PYTHONPATH holding the root: a timing trial of every task and variant, the
# models trained with the recipe's steps scaled by one factor to fit TRAIN_S (training/diagnostics.py;
# every variant keeps one budget), the `state_tracking` suite run on them and on the zoo's flip-flop
# models, and its report. The weights stay on the host (about 400 MB); what comes back in $OUT:
# trial.json, cards.tar (every model's model_card.json and README.md), logs.tar, state_tracking.tgz
# (the run's compact copy: training/study.py), report.md, figure2.png and the run log the caller tees.
#   REVISION=$(git rev-parse --short HEAD) bash training/gpu_diagnostics.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/diagnostics; RUN=/tmp/state_tracking
REVISION=${REVISION:-unknown}; WORKERS=${WORKERS:-12}; TRAIN_S=${TRAIN_S:-360}; MQRAR_HEADS=${MQRAR_HEADS:-2}
export OMP_NUM_THREADS=1
stamp() { echo "[$(date +%T)] $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
stamp "trial: a few steps of each task and variant, at once"
timeout 240 python3 -m training.diagnostics trial --workers $WORKERS --mqrar-heads $MQRAR_HEADS --out $W \
  2> $W.trial.err | tail -1 > $OUT/trial.json
cat $OUT/trial.json; [ -s $OUT/trial.json ] || { tail -20 $W.trial.err; exit 1; }
stamp "training every model, fitted to ${TRAIN_S}s"
timeout $((TRAIN_S * 3 / 2)) python3 -m training.diagnostics train --workers $WORKERS --out $W/models \
  --revision $REVISION --mqrar-heads $MQRAR_HEADS --fit $OUT/trial.json --fit-s $TRAIN_S --deadline-s $((TRAIN_S * 5 / 4))
stamp "trained: exit $?"
(cd $W/models && tar -cf $OUT/cards.tar */model_card.json */README.md); tar -cf $OUT/logs.tar -C $W/models logs
stamp "the state_tracking suite"
python3 eval.py run --suite state_tracking --model $W/models/a5_* $W/models/mqrar* zoo:flipflop_rope zoo:flipflop_fox \
  zoo:flipflop_path zoo:flipflop_path_fox --device cuda --batch-size 64 --out $RUN --quiet > $W.run.log 2>&1
stamp "run exit $?"; tail -5 $W.run.log
python3 eval.py report $RUN --layout state_tracking --format markdown --plot $W/plots > $OUT/report.md
cp $W/plots/state_tracking_figure2.png $OUT/figure2.png
python3 -m training.study $RUN /tmp/state_tracking_compact && tar -czf $OUT/state_tracking.tgz -C /tmp state_tracking_compact
cat $OUT/report.md | tail -15
ls -la $OUT; stamp "done"
