#!/usr/bin/env bash
# The zoo study on one GPU (the H200 device tool), run from the repository root with the wheels
# installed and PYTHONPATH holding the root; DATA is a data dir holding the Paul Graham essays
# (`python eval.py download --suite zoo_study --data-dir DATA`). Beside the study, the parity check
# of the language models against fla's own (transformers' for RoPE), float32. What comes back in
# $OUT: parity.json and its log, zoo_study.tgz (the run's compact copy: training.study) and
# the run log the caller tees.
#   bash training/gpu_study.sh DATA
set -uo pipefail
DATA=$1; OUT=${OUT:-/tmp/out}; RUN=/tmp/zoo_study
stamp() { echo "[$(date +%T)] $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
stamp "parity (in the background) and the study"
( timeout ${PARITY_S:-300} python3 -m training.parity --out $OUT/parity.json \
    path_eval/zoo/models/{rope,fox,path,path_fox} > $OUT/parity.log 2>&1 ) &
parity=$!
timeout ${STUDY_S:-480} python3 eval.py run --suite zoo_study --model zoo --data-dir "$DATA" --device cuda \
  --batch-size ${BATCH:-32} --out $RUN --quiet
stamp "study exit $?"
cat $RUN/timings.json 2>/dev/null
python3 -m training.study $RUN /tmp/zoo_study_compact && tar -czf $OUT/zoo_study.tgz -C /tmp zoo_study_compact
wait $parity; stamp "parity exit $?"; cat $OUT/parity.log | cut -c1-300
ls -la $OUT; stamp "done"
