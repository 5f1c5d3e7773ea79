#!/usr/bin/env bash
# The GPU checks of docs/gpu.md in one call, on a bare machine with one CUDA GPU and torch installed (about 8 minutes):
#
#   bash benchmarks/device_check.sh                         # from the repository's root; every step, in order
#   bash benchmarks/device_check.sh cuda-tests gpu-bench    # some steps only
#   BUDGET=540 bash benchmarks/device_check.sh              # seconds for the whole script (default 500)
#   INSTALL=0 PYTHON=.venv/bin/python LARGE_ARGS="--layers 2 --width 64 --device cpu" OUT=/tmp/dc \
#     bash benchmarks/device_check.sh large-observe           # a check of this script on a CPU
#
# Steps, each under its own `timeout` and cut to what is left of BUDGET, its output teed into $OUT/NAME.log:
#   cuda-tests     python -B -m pytest -n 0 -q tests/cuda
#   observer-cost  python -B -m benchmarks.observer_cost --large --device cuda --layers 4,16 --width 8192
#   gpu-bench      python -B -m benchmarks.gpu (--ratio-repeats 1), its tables written into $OUT/gpu.md (a copy of
#                  docs/gpu.md; the repository's is left alone) and $OUT/gpu.json
#   large-observe  resumeproof verify --observe of examples/unmodified/large_bf16.py (1.07B parameters, pure bf16,
#                  a 6 GB checkpoint overwritten after every update), unmodified, on the one GPU: --steps 3
#                  --interrupt-at 1, its verification.json into $OUT/large-verification.json
# BUDGET counts from the script's start, the install included: give the call that runs it a minute more (the device
# tool's timeout_s about 560 for the default), and a step cut short still leaves its log and the summary.
# $OUT/summary.txt says what was installed and how each step ended. What comes back is at most 8 files of $OUT:
# summary.txt, the four logs, gpu.md, gpu.json, large-verification.json. $OUT defaults to runs/device-check-TIME.
#
# It installs the project without touching torch: `pip install --no-deps -e .`, nothing resolved from an index.
# The image has click, rich, numpy and xxhash; not jsonschema, which only the tests' schema check needs (skipped,
# saying so, without it). That machine reaches no index: to have it, download its wheels here and carry `.whl`
# (ignored by git through .git/info/exclude), and this script installs them first:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 -d .whl jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
#     referencing==0.37.0 rpds-py==2026.9.1
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

OUT=${OUT:-runs/device-check-$(date +%Y%m%d-%H%M%S)}
BUDGET=${BUDGET:-500}
PY=${PYTHON:-python3}
LARGE_ARGS=${LARGE_ARGS:-}  # the large script's size and device: its defaults (16 x 8192, cuda) unless given
WORK=$(mktemp -d /tmp/device-check.XXXXXX)  # the runs themselves: checkpoints of gigabytes stay out of $OUT
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMMARY=$OUT/summary.txt
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
started=$SECONDS

say() { echo "$*" | tee -a "$SUMMARY"; }

reap() {  # reap MARK: the processes a step left in sessions of their own (the verifier's trainers), by their mark
  local environ pid
  for environ in /proc/[0-9]*/environ; do
    pid=${environ#/proc/}
    pid=${pid%/environ}
    if tr '\0' '\n' <"$environ" 2>/dev/null | grep -qx "DEVICE_CHECK_MARK=$1"; then
      kill -KILL "$pid" 2>/dev/null && say "  killed process $pid, left running by $1"
    fi
  done
}

step() {  # step NAME CAP COMMAND...: at most CAP seconds, and never more than what is left of BUDGET
  local name=$1 cap=$2 left limit began rc
  shift 2
  left=$((BUDGET - (SECONDS - started)))
  limit=$((cap < left ? cap : left))
  if ((limit < 30)); then
    say "$name: not run, ${left} s of the ${BUDGET} s budget left"
    return
  fi
  began=$SECONDS
  DEVICE_CHECK_MARK=$name timeout --kill-after 10 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
  rc=${PIPESTATUS[0]}
  reap "$name"
  say "$name: exit $rc in $((SECONDS - began)) s (limit $limit s)$( ((rc == 124 || rc == 137)) && echo ', timed out')"
}

{
  echo "device check of $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 2
  "$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
} 2>&1 | tee "$SUMMARY"

if [[ ${INSTALL:-1} == 0 ]]; then  # a check of this script where the project is installed already
  say "nothing installed (INSTALL=0)"
else
  if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-cache-dir .whl/*.whl 2>&1 | tail -n 3 | tee -a "$SUMMARY"
  fi
  if ! "$PY" -m pip install -q --no-deps --no-build-isolation --no-cache-dir -e . >>"$SUMMARY" 2>&1; then
    say "pip install -e . failed: the steps run with PYTHONPATH=$PWD"
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
  fi
fi
for module in click rich numpy xxhash jsonschema pytest xdist; do
  "$PY" -c "import $module" 2>/dev/null || say "not importable: $module"
done

large() {  # verify --observe of the unmodified 1.07B-parameter bf16 script
  local script cmd
  script=$(printf %q "$PWD/examples/unmodified/large_bf16.py")
  cmd="$(printf %q "$PY") -B $script $LARGE_ARGS --max-iters {steps} --out-dir {run}"
  "$PY" -B -m resumeproof verify --observe --output "$WORK/large" --steps 3 --interrupt-at 1 --jobs 3 \
    --train-cmd "$cmd" --resume-cmd "$cmd --resume {checkpoint}" --checkpoint "{run}/ckpt.pt"
}

after_large() {  # its verification.json into $OUT, its trajectories' last lines into its log, also after a timeout
  local log
  cp "$WORK/large/verification.json" "$OUT/large-verification.json" 2>/dev/null
  for log in "$WORK"/large/logs/*.log; do
    [[ -f $log ]] && echo "== the last lines of $log" && tail -n 15 "$log"
  done >>"$OUT/large-observe.log"
  rm -rf "$WORK/large"  # six gigabytes a trajectory
}

bench() {  # the GPU matrix, its tables into a copy of docs/gpu.md under $OUT
  local rc
  cp docs/gpu.md "$OUT/gpu.md"
  "$PY" -B -m benchmarks.gpu --output "$WORK/gpu-bench" --doc "$OUT/gpu.md" --parallel 3 --jobs 4 --ratio-repeats 1
  rc=$?
  cp "$WORK/gpu-bench/gpu.json" "$OUT/gpu.json" 2>/dev/null
  return "$rc"
}

export -f large bench  # run by `timeout ... bash -c NAME`, each in a process of its own
export PY WORK OUT LARGE_ARGS
run_steps=("$@")
((${#run_steps[@]})) || run_steps=(cuda-tests observer-cost gpu-bench large-observe)
for name in "${run_steps[@]}"; do
  case $name in
    cuda-tests) step cuda-tests 200 "$PY" -B -m pytest -n 0 -q tests/cuda ;;
    observer-cost)
      step observer-cost 100 "$PY" -B -m benchmarks.observer_cost --large --device cuda --layers 4,16 --width 8192
      ;;
    gpu-bench) step gpu-bench 220 bash -c bench ;;
    large-observe)
      step large-observe 200 bash -c large
      after_large
      ;;
    *) say "unknown step $name (cuda-tests, observer-cost, gpu-bench, large-observe)" ;;
  esac
done
rm -rf "$WORK"
say "done in $((SECONDS - started)) s of a ${BUDGET} s budget; outputs in $OUT"
