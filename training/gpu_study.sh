#!/usr/bin/env bash
# The zoo study on one GPU (the H200 device tool), run from the repository root with the wheels
# installed and PYTHONPATH holding the root; DATA is a data dir holding the Paul Graham essays
# (`python eval.py download --suite zoo_study --data-dir DATA`). The study runs as one process per
# part, side by side on the one GPU: each language model (rope, fox, path, path_fox) and the four
# flip-flop models together, each into a run folder of its own (a small model leaves most of the
# GPU idle; processes of one study freeze each sample set once, path_eval.tasks.frozen). Beside it,
# the parity check of the language models against fla's own (transformers' for RoPE), float32.
# A part stopped by STUDY_S resumes where it stopped when the same command runs again on the same
# host (RESUME=1 keeps the run folders; without it each call starts afresh).
# What comes back in $OUT: parity.json and its log, zoo_study.tgz (each part's compact copy:
# training.study, under zoo_study_compact/PART), each part's log and the run log the caller tees.
#   bash training/gpu_study.sh DATA
set -uo pipefail
DATA=$1; OUT=${OUT:-/tmp/out}; RUN=/tmp/zoo_study; COPY=/tmp/zoo_study_compact
PARTS=${PARTS:-rope fox path path_fox flipflop}
stamp() { echo "[$(date +%T)] $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
[ "${RESUME:-0}" = 1 ] || rm -rf $RUN
rm -rf $COPY; mkdir -p $RUN $COPY
stamp "parity (in the background) and the study's parts: $PARTS"
( timeout ${PARITY_S:-300} python3 -m training.parity --out $OUT/parity.json \
    path_eval/zoo/models/{rope,fox,path,path_fox} > $OUT/parity.log 2>&1 ) &
parity=$!
pids=()
for part in $PARTS; do
  models=zoo:$part
  [ $part = flipflop ] && models="zoo:flipflop_rope zoo:flipflop_fox zoo:flipflop_path zoo:flipflop_path_fox"
  timeout ${STUDY_S:-480} python3 eval.py run --suite zoo_study --model $models --data-dir "$DATA" --device cuda \
    --batch-size ${BATCH:-32} --out $RUN/$part --quiet > $OUT/study_$part.log 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do wait ${pids[$i]}; stamp "part $(echo $PARTS | cut -d' ' -f$((i + 1))) exit $?"; done
copies=()
for part in $PARTS; do
  python3 -c "import json,sys; t=json.load(open(sys.argv[1])); print(sys.argv[2], {k: v for k, v in t.items() if k != 'spans'})" \
    $RUN/$part/timings.json $part 2>/dev/null | cut -c1-400
  python3 -m training.study $RUN/$part $COPY/$part &
  copies+=($!)
done
wait "${copies[@]}"
tar -czf $OUT/zoo_study.tgz -C /tmp zoo_study_compact
wait $parity; stamp "parity exit $?"; cut -c1-300 $OUT/parity.log
ls -la $OUT; stamp "done"
