#!/usr/bin/env bash
# One GPU session (the H200 device tool): install the carried wheels, then run the named steps,
# each under its own time limit, logging to $OUT. Steps: cuda-tests, parity-quick, parity, extrapolation,
# long-context (RULER at 16K and PhoneBook at 8K with a 760M-shaped random PaTH model; carry `.gpudata`,
# built here first with: python -c "from tests.shared_data import build_data_dir, copy_essays;
# copy_essays(build_data_dir('.gpudata', ['ruler_qa_1', 'ruler_qa_2']))"),
# data-parallel (benchmarks.data_parallel: RULER 16K on one and two processes, needs the nvidia-h200-x2 kind;
#   DP_PROCESSES=1 alone, then DP_PROCESSES=2 DP_BASELINE=<the first JSON> when both do not fit one command),
# kernel-tests (tests/kernels but the whole-model ones, compiled, one fixed kernel configuration: about 6 minutes on one
#   worker; KT_K= picks tests by -k),
# walk (the coarse walk: its compiled tests and the forward ones, one fixed kernel configuration, then the forward bench
#   of PaTH / PaTH-FoX at super-chunk sizes WALK_S beside fla and SDPA into $OUT/kernels_walk.json; WT_K= picks tests by -k,
#   WALK_OPS, WALK_D and WALK_ARGS the bench's ops, head dims and further arguments; WT_S=0 skips the tests),
# launch (benchmarks.launch_configs: the preparation's and the super-chunk transport's launch configurations timed;
#   LC_ARGS="--parts decode" LC_OUT=decode_launch_configs the decoding step's),
# ablation (benchmarks.transition_ablation: the transition kernel with one part removed at a time and candidate
#   rewrites; AB_ARGS= its arguments (--kinds candidate: the whole kernel and the candidates only); AB_S= the limit,
#   150 s: seven variants compile per head dim, and 70 s on a cold machine were not enough),
# coarse-loop (benchmarks.coarse_loop: the forward's inner loop against an earlier fwd.py named by CL_BASELINE=, carried
#   as an ignored file; CL_ARGS= further arguments, CL_S= the limit, 360 s),
# end-to-end (benchmarks.end_to_end: E2E_PARTS= its parts, default generate (about 300 s on an H200, most of it
#   fla's warm-up and timed call); then E2E_PARTS=cold,run E2E_OUT=end_to_end_h200_cold_run in the next command while
#   the same machine is held, so that the run part finds the kernels the generate part compiled in Triton's cache
#   (about 90 s); E2E_S= the limit, 560 s),
# apply (the ablation's candidate named by APPLY= written into prep.py, for the test steps after it),
# decode-tests (the decoding kernels compiled, and whole-model decoding replayed from a CUDA graph against eager steps;
#   DT_S= the limit, 150 s),
# model-tests (the whole-model agreement of full forward, chunked prefill and decoding on the triton backend: about 1.5 minutes), kernels (benchmarks.kernels; PARTS= picks parts, KARGS= adds arguments),
# figure1 (benchmarks.kernels' forwards in the PaTH paper's Figure 1 setting: batch 32, 32 heads of 64, 1K-16K, ours,
#   fla's and SDPA's, into $OUT/figure1_h100.json or figure1_h200.json by the GPU; F1_S= the limit, 400 s),
# generation (benchmarks.generation: whole-model decoding tokens/s of ours, eager and CUDA graphs, against the same-shape
#   Llama with a static cache, compiled and eager, into $OUT/generation_h200.json; GEN_S= the limit, 400 s, no measurement
#   started after 3/4 of it; GEN_ARGS= further arguments),
# scoring-profile (benchmarks.scoring_profile: GPU ms per kernel of one 64K scoring call, ours and the Llama; SP_ARGS=
#   further arguments, SP_S= the limit, 240 s),
# scoring-64k (issue 18's memory and tokens/s target: one 64K block scored by ours, the same-shape Llama and fla's model,
#   into $OUT/extrapolation_64k_h200.json; S64_S= the limit, 200 s),
# fixed-cost (benchmarks.fixed_cost: eval.py run of RULER niah_single_1 at 16K, 26 requests, cold then warm, part by
#   part, on the 760M-shaped random PaTH model and on zoo:path, into $OUT/fixed_cost_h100_*.json or _h200_*.json
#   by the GPU; FC_S= the limit of each, 240 s),
# beta-near-two (benchmarks.beta_near_two: bf16 PaTH / PaTH-FoX forwards, ours as shipped and with the accurate
#   preparation, and fla's, against the float64 definition's last 256 rows as beta -> 2, 4K-64K, D 64 and 128, into
#   $OUT/beta_near_two_h100.json or _h200.json by the GPU; B2_S= the limit, 300 s; B2_ARGS= further arguments, such as
#   --head-dims 128; B2_LABEL= a file suffix),
# prep-cost (benchmarks.kernels' forward part for path_fwd and path_fox_fwd with --accurate-preparation: what the
#   accurate preparation costs, into $OUT/kernels_accurate_prep_h100.json or _h200.json by the GPU; PC_S= the
#   limit, 300 s),
# fox-overhead (benchmarks.kernels' forward part for path_fwd and path_fox_fwd, FO_RUNS times (default 2; the first
#   also checks every op against the float32 torch backend at 4K and 16K), each into $OUT/fox_overhead_run<i>.json;
#   then, with FO_BASELINE= an earlier fwd.py carried as a file, path_fox_fwd alone with that fwd.py in place into
#   $OUT/fox_overhead_baseline.json (the shipped one put back after): PaTH-FoX's forward against PaTH's, issue 47's
#   15% line; FO_S= the limit of each, 240 s),
# import-cost (benchmarks.import_cost: `import path_eval.lm` in fresh interpreters, package by package, as installed,
#   then again after `compileall` of the wheels, path_eval and kernels (path_eval/kernels is a link, which compileall
#   does not follow), then after `compileall` of the image's own site-packages (torch, numpy, sympy, triton: the image
#   ships them without bytecode), into $OUT/import_cost_h100.json or _h200.json by the GPU: whether the host's imports
#   compile sources at every start; run it first and once a host (a second run finds its labels taken), as later steps
#   then find everything byte-compiled; IC_S= the limit of each series, 120 s),
# zoo-profile (one zoo model's whole zoo_study run under cProfile, batch 32, into $OUT/zoo_profile_h100.prof or _h200
#   and its 60 costliest calls by cumulative and 40 by own time beside it, .txt: where a small model's run spends the
#   time the GPU waits; ZP_MODEL= the zoo name, path; ZB_DATA= the essays' data dir (carried); ZP_S= the limit, 300 s:
#   a run stopped there still writes its profile, as the run answers SIGTERM by returning),
# compile (import-cost's byte-compiling without its measurements, for a host that is not to run import-cost, before
#   fixed-cost or zoo-busy: a user's pip install leaves bytecode, this image's does not),
# zoo-warm (the whole zoo_study at --limit 2 into a scratch folder: it compiles every model's kernels, so that a
#   zoo-busy or zoo-profile after it, on the same machine, runs with Triton's caches warm; the limit's sets are
#   frozen with 2 samples, so the study's own sets are frozen by the first full run, in its samples phase, outside
#   the requests; ZB_DATA= as zoo-busy's; ZW_S= the limit, 240 s),
# decode-parts (benchmarks.decode_parts: one batch of a zoo model's generation part by part, prefill, eager step, graph
#   capture with its own memory pool and a shared one, replay, whole generate calls, into $OUT/decode_parts_h100.json or
#   _h200.json by the GPU; DPT_ARGS= further arguments, DPT_S= the limit, 240 s),
# request-timeline (benchmarks.request_timeline: zoo:path's requests on the zoo study's generation tasks split at the
#   adapter's seams, lm-eval's work, between batches, around generate, generate and the GPU's span in it, into
#   $OUT/request_timeline_h100.json or _h200.json by the GPU; ZB_DATA= the essays' data dir (carried); RT_ARGS=
#   further arguments (--model zoo for every text model); RT_LABEL= a file suffix; RT_S= the limit, 240 s),
# timeline-ab (request-timeline twice on one machine, first with earlier copies of some files in place, then as shipped:
#   AB_BASELINE= a carried folder holding those copies at their repository paths, each put in place for the first run
#   and the shipped file put back after (one the shipped tree lacks is removed after); each run in its own work folder,
#   into $OUT/request_timeline_<gpu>_baseline<RT_LABEL>.json and _shipped<RT_LABEL>.json, then benchmarks.precision
#   compares the two runs' records and every logged generation into $OUT/timeline_ab_<gpu><RT_LABEL>.json: a host-side
#   change's cost and whether it changed a generation, from one host; run it warm (after zoo-warm or a first
#   request-timeline); RT_ARGS and ZB_DATA as request-timeline's; AB_SOURCE= where the copies come from, such as
#   "19db3e6's", named in the record's note with the copies' paths; AB_S= the limit of each run, 150 s),
# zoo-busy (benchmarks.suite_busy: the whole zoo_study in one process, batch 32, nvidia-smi's utilisation matched to its
#   requests phase, into $OUT/zoo_study_busy_h100.json or _h200.json by the GPU; ZB_DATA= a data dir holding the
#   essays (carried), ZB_S= the limit, 420 s: the run is stopped 75 s before it and recorded as stopped; ZB_ARGS=
#   further arguments, such as --attention triton: the zoo's Llama on the harness's RoPE model; ZB_LABEL= a file suffix).
# The test steps spread their tests over GPU_TEST_WORKERS pytest-xdist workers (default 8, all on the one GPU; 0: one
# process; tests marked with one xdist_group, such as the ~20 GB offset tests, share a worker). Their time is mostly Triton
# compiling, on the CPU; no test is timed. With workers, each test's printed lines
# (rel err, graph vs eager) reach the log through -rA at the end, so a step cut by its limit logs only its progress.
# REVISION= the commit sent (computed where the call starts): the runs' records name it, since the host's
# copy of .git can lag behind the files it was sent.
#   REVISION=abc1234 bash benchmarks/gpu_session.sh cuda-tests parity extrapolation
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ -z "${REVISION:-}" ] || export PATH_EVAL_GIT_REVISION=$REVISION
stamp() { echo "[$(date +%T)] $*"; }
image_site() {  # the image's own site-packages, where torch is, found without importing torch
  python3 -c "import importlib.util, os; print(os.path.dirname(os.path.dirname(importlib.util.find_spec('torch').origin)))"; }
byte_compile() {  # bytecode for every module under the folders given: the host's interpreter may not write any
  timeout ${IC_S:-120} python3 -m compileall -q -j 16 "$@" > /dev/null 2>&1 && return
  local code=$?; stamp "compileall $* ended $code"; return $code; }
import_cost() { timeout ${IC_S:-120} python3 -m benchmarks.import_cost --repeats 2 --out "$OUT/import_cost_$(gpu_tag).json" "$@"; }
gpu_tag() {  # h100 or h200 from the first GPU's name, else gpu: names a record by its machine
  local tag; tag=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -o -i -m1 'h[0-9]00' | head -1)
  tag=${tag,,}; echo "${tag:-gpu}"; }
# A machine kept warm between commands already has these wheels; installing them again would cost every command
# part of the half minute it takes to reach its first step (install, nvidia-smi, the version line).
installed=/tmp/site/.path-eval-wheels-$(stat -c '%n %s' .whl/*.whl | md5sum | cut -c1-16)  # names and sizes: a copy's times change
if [ -e "$installed" ]; then stamp "wheels already installed"; else
  stamp "installing wheels"
  python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
  touch "$installed"
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
workers=${GPU_TEST_WORKERS:-8}
if [ "$workers" = 0 ]; then spread=(-s); else spread=(-n "$workers" --dist loadgroup -rA); fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import os; from path_eval.cpu_threads import allowed_cores, cgroup_quota, usable_cores
print(f'cores: {allowed_cores()} allowed of {os.cpu_count()}, cgroup quota {cgroup_quota()}, usable {usable_cores()}')"
python3 -c "import torch, triton, transformers, fla; print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__, 'fla', fla.__version__)"
for step in "$@"; do
  stamp "step $step"
  case $step in
    kernel-tests) PATH_EVAL_AUTOTUNE=0 timeout ${KT_S:-480} python3 -m pytest -q "${spread[@]}" -p no:cacheprovider tests/kernels -k "${KT_K:-not test_model_full_forward}" > "$OUT/kernel_tests.log" 2>&1
      grep -E "rel err|correlated|cache errors|passed|failed|Error" "$OUT/kernel_tests.log" | tail -40 ;;
    decode-tests) PATH_EVAL_AUTOTUNE=0 timeout ${DT_S:-150} python3 -m pytest -q "${spread[@]}" -p no:cacheprovider tests/kernels/test_path_attn_cuda.py \
        tests/kernels/test_path_attn.py -k "${DT_K:-captured or graph_decoding or decod or recorded or tail or cache_segments}" > "$OUT/decode_tests.log" 2>&1
      grep -E "graph vs eager|passed|failed|Error" "$OUT/decode_tests.log" | tail -30 ;;
    model-tests) PATH_EVAL_AUTOTUNE=0 timeout ${MT_S:-480} python3 -m pytest -q "${spread[@]}" -p no:cacheprovider tests/kernels/test_path_attn_cuda.py::test_model_full_forward_chunked_prefill_and_decode_agree tests/models/test_model_cache.py::test_triton_backend_model_agrees_with_torch_backend > "$OUT/model_tests.log" 2>&1
      grep -E "chunk|decode max|passed|failed|Error" "$OUT/model_tests.log" | tail -30 ;;
    walk) [ "${WT_S:-200}" = 0 ] || PATH_EVAL_AUTOTUNE=0 timeout ${WT_S:-200} python3 -m pytest -q "${spread[@]}" -p no:cacheprovider tests/kernels/test_path_attn_cuda.py tests/kernels/test_path_attn.py \
        -k "${WT_K:-coarse or real_shapes or offsets or forward_half}" > "$OUT/walk_tests.log" 2>&1
      [ -f "$OUT/walk_tests.log" ] && grep -E "rel err|passed|failed|Error" "$OUT/walk_tests.log" | tail -30
      timeout ${WB_S:-360} python3 -m benchmarks.kernels --parts forward --ops ${WALK_OPS:-path_fwd,path_fox_fwd,attn_fwd} \
        --head-dims ${WALK_D:-128,64} --super-chunks ${WALK_S:-1,4,8} ${WALK_ARGS:-} --out "$OUT/kernels_walk.json" ;;
    launch) timeout ${LC_S:-300} python3 -m benchmarks.launch_configs ${LC_ARGS:-} --out "$OUT/${LC_OUT:-launch_configs}.json" ;;
    ablation) timeout ${AB_S:-150} python3 -m benchmarks.transition_ablation ${AB_ARGS:-} --out "$OUT/transition_ablation.json" ;;
    coarse-loop) timeout ${CL_S:-360} python3 -m benchmarks.coarse_loop --baseline "${CL_BASELINE:?name the earlier fwd.py in CL_BASELINE=}" \
        ${CL_ARGS:-} --out "$OUT/coarse_loop.json" ;;
    end-to-end) timeout ${E2E_S:-560} python3 -m benchmarks.end_to_end --parts "${E2E_PARTS:-generate}" \
      --work /tmp/e2ework --out "$OUT/${E2E_OUT:-end_to_end_h200}.json" ;;
    fixed-cost) timeout ${FC_S:-240} python3 -m benchmarks.fixed_cost --shape 760m --work /tmp/fcwork \
        --out "$OUT/fixed_cost_$(gpu_tag)_760m.json"
      timeout ${FC_S:-240} python3 -m benchmarks.fixed_cost --model zoo:path --work /tmp/fcwork --out "$OUT/fixed_cost_$(gpu_tag)_zoo_path.json" ;;
    beta-near-two) timeout ${B2_S:-300} python3 -m benchmarks.beta_near_two --out "$OUT/beta_near_two_$(gpu_tag)${B2_LABEL:-}.json" \
        --budget-s $(( ${B2_S:-300} - 30 )) ${B2_ARGS:-} ;;
    prep-cost) timeout ${PC_S:-300} python3 -m benchmarks.kernels --parts forward --ops path_fwd,path_fox_fwd \
        --accurate-preparation --no-fla --out "$OUT/kernels_accurate_prep_$(gpu_tag).json" ;;
    fox-overhead)
      for run in $(seq 1 ${FO_RUNS:-2}); do
        parts=forward; [ "$run" = 1 ] && parts=check,forward
        timeout ${FO_S:-240} python3 -m benchmarks.kernels --parts $parts --ops path_fwd,path_fox_fwd --no-fla \
          --check-lengths 4096,16384 --out "$OUT/fox_overhead_run$run.json"
      done
      if [ -n "${FO_BASELINE:-}" ]; then
        cp kernels/path_attn/fwd.py /tmp/fwd_shipped.py && cp "$FO_BASELINE" kernels/path_attn/fwd.py
        timeout ${FO_S:-240} python3 -m benchmarks.kernels --parts forward --ops path_fox_fwd --no-fla \
          --out "$OUT/fox_overhead_baseline.json"
        cp /tmp/fwd_shipped.py kernels/path_attn/fwd.py
      fi ;;
    request-timeline) timeout ${RT_S:-240} python3 -m benchmarks.request_timeline \
        --data-dir "${ZB_DATA:?name the data dir holding the essays in ZB_DATA=}" ${RT_ARGS:-} \
        --out "$OUT/request_timeline_$(gpu_tag)${RT_LABEL:-}.json" ;;
    timeline-ab) base=${AB_BASELINE:?name the carried folder of earlier files in AB_BASELINE=}; kept=/tmp/ab_shipped
      rm -rf "$kept" /tmp/ab_added; mkdir -p "$kept"; : > /tmp/ab_added
      for f in $(cd "$base" && find . -type f | sed 's|^\./||'); do
        if [ -e "$f" ]; then mkdir -p "$kept/$(dirname "$f")"; cp "$f" "$kept/$f"; else echo "$f" >> /tmp/ab_added; fi
        mkdir -p "$(dirname "$f")"; cp "$base/$f" "$f"; done
      for side in baseline shipped; do
        [ $side = shipped ] && { (cd "$kept" && find . -type f | sed 's|^\./||') | while read -r f; do cp "$kept/$f" "$f"; done
          while read -r f; do rm -f "$f"; done < /tmp/ab_added; }
        stamp "timeline-ab: $side"
        timeout ${AB_S:-150} python3 -m benchmarks.request_timeline --data-dir "${ZB_DATA:?name the data dir holding the essays in ZB_DATA=}" \
          ${RT_ARGS:-} --work /tmp/rt_ab_$side --out "$OUT/request_timeline_$(gpu_tag)_$side${RT_LABEL:-}.json"; done
      python3 -m benchmarks.precision /tmp/rt_ab_baseline/run /tmp/rt_ab_shipped/run --out "$OUT/timeline_ab_$(gpu_tag)${RT_LABEL:-}.json" \
        --note "timeline-ab: AB_BASELINE=$base (${AB_SOURCE:-earlier} files: $(cd "$base" && find . -type f | sed 's|^\./||' | sort | paste -sd ' ')) against the shipped files" | grep -E '"(samples|differ)"' | sort | uniq -c ;;
    zoo-busy) timeout ${ZB_S:-420} python3 -m benchmarks.suite_busy --data-dir "${ZB_DATA:?name the data dir holding the essays in ZB_DATA=}" \
        --work /tmp/zbwork --budget-s $(( ${ZB_S:-420} - 75 )) ${ZB_ARGS:-} --out "$OUT/zoo_study_busy_$(gpu_tag)${ZB_LABEL:-}.json" ;;
    decode-parts) timeout ${DPT_S:-240} python3 -m benchmarks.decode_parts ${DPT_ARGS:-} --out "$OUT/decode_parts_$(gpu_tag).json" ;;
    zoo-warm) rm -rf /tmp/zwwork  # a fresh run, not a resumed one that compiles nothing
      timeout ${ZW_S:-240} python3 eval.py run --suite zoo_study --model zoo --limit 2 --device cuda --batch-size 32 \
        --data-dir "${ZB_DATA:?name the data dir holding the essays in ZB_DATA=}" --out /tmp/zwwork --quiet ;;
    zoo-profile) prof="$OUT/zoo_profile_$(gpu_tag).prof"; rm -rf /tmp/zpwork  # a fresh run, not a resumed one
      timeout ${ZP_S:-300} python3 -m cProfile -o "$prof" eval.py run --suite zoo_study --model "zoo:${ZP_MODEL:-path}" \
        --data-dir "${ZB_DATA:?name the data dir holding the essays in ZB_DATA=}" --device cuda --batch-size 32 \
        --out /tmp/zpwork --quiet
      python3 -c "import pstats, sys; stats = pstats.Stats(sys.argv[1]); stats.sort_stats('cumulative').print_stats(60)
stats.sort_stats('tottime').print_stats(40)" "$prof" > "${prof%.prof}.txt" ;;
    import-cost) import_cost --label as-installed
      byte_compile /tmp/site path_eval kernels \
        && import_cost --label byte-compiled --note "after python3 -m compileall /tmp/site path_eval kernels"
      site=$(image_site)
      if [ -w "$site" ]; then byte_compile "$site" \
        && import_cost --label image-compiled --note "after python3 -m compileall of the image's $site as well"
      else stamp "$site is not writable: no image-compiled series"; fi ;;
    compile) byte_compile /tmp/site path_eval kernels
      if [ -w "$(image_site)" ]; then byte_compile "$(image_site)"; else stamp "$(image_site) is not writable"; fi ;;
    apply) python3 -m benchmarks.transition_ablation --apply "${APPLY:?name the candidate in APPLY=}" ;;
    kernels) timeout ${KTIMEOUT:-560} python3 -m benchmarks.kernels --parts "${PARTS:-check,forward,prefill,decode}" ${KARGS:-} --out "$OUT/kernels.json" ;;
    figure1) timeout ${F1_S:-400} python3 -m benchmarks.kernels --parts forward --batch 32 --heads 32 --head-dims 64 \
               --lengths 1024,2048,4096,8192,16384 ${KARGS:-} --out "$OUT/figure1_$(gpu_tag).json" ;;
    cuda-tests) timeout 300 python3 -m pytest -q -p no:cacheprovider tests/lm/test_cuda.py 2>&1 | tail -5 ;;
    parity-quick) timeout 240 python3 -m benchmarks.fla_parity --cases 0,2,4 --lengths 1000 --out "$OUT/fla_parity_quick.json" ;;
    parity) timeout 530 python3 -m benchmarks.fla_parity --cases 0,2,4,1,3,5,6,7 --out "$OUT/fla_parity.json" ;;
    generation) timeout ${GEN_S:-400} python3 -m benchmarks.generation --budget-s $(( ${GEN_S:-400} * 3 / 4 )) ${GEN_ARGS:-} \
        --out "$OUT/generation_h200.json" ;;
    scoring-profile) timeout ${SP_S:-240} python3 -m benchmarks.scoring_profile ${SP_ARGS:-} --top 25 \
        --out "$OUT/scoring_profile_h200.json" ;;
    extrapolation) timeout 560 python3 -m benchmarks.extrapolation_speed --budget-s 400 --out "$OUT/extrapolation_h200.json" ;;
    scoring-64k) timeout ${S64_S:-200} python3 -m benchmarks.extrapolation_speed --models path,rope-sdpa,fla-path --lengths 65536 \
        --warmup 65536 --prefill-chunk 8192 --out "$OUT/extrapolation_64k_h200.json" ;;
    long-context)
      python3 -m path_eval.models.random_checkpoint --variant path --out /tmp/path-760m
      timeout ${RULER_S:-300} python3 eval.py run --suite ruler --lengths 16k --limit 3 --model /tmp/path-760m --data-dir .gpudata \
        --device cuda --batch-size 8 --out /tmp/runs/ruler16k --quiet && cp /tmp/runs/ruler16k/results.json "$OUT/ruler16k.json"
      timeout ${PHONEBOOK_S:-200} python3 eval.py run --suite phonebook --lengths 8k --limit 5 --model /tmp/path-760m --data-dir .gpudata \
        --device cuda --batch-size 8 --out /tmp/runs/phonebook8k --quiet && cp /tmp/runs/phonebook8k/results.json "$OUT/phonebook8k.json" ;;
    data-parallel)
      [ -d /tmp/path-760m ] || python3 -m path_eval.models.random_checkpoint --variant path --out /tmp/path-760m
      timeout ${DP_S:-570} python3 -m benchmarks.data_parallel --model /tmp/path-760m --data-dir .gpudata --suite ruler \
        --lengths ${DP_LENGTHS:-16k} --limit ${DP_LIMIT:-25} --device cuda --batch-size 8 --processes ${DP_PROCESSES:-1,2} \
        ${DP_BASELINE:+--baseline "$DP_BASELINE"} --work /tmp/dp --out "$OUT/data_parallel_h200.json" ;;
    *) echo "unknown step $step" ;;
  esac
  stamp "step $step done (exit $?)"
done
