#!/usr/bin/env bash
# One-off GPU check of marl (issue 41): env throughput against the peers, seeds vmapped against
# seeds one after another in training, and the device-agnostic unit tests, on a GPU machine
# whose python3 has jax (CUDA), flax, optax, chex, orbax-checkpoint, matplotlib, numpy, scipy,
# pyyaml, hypothesis, pytest, pytest-xdist, tabulate, pandas, msgpack and safetensors, and no
# network.
#
# 1. Where a package index is reachable, fetch the other wheels (scripts/gpu_wheels.txt, about
#    10 MB) into .whl/, which .git/info/exclude keeps out of git:
#        bash scripts/gpu_check.sh --wheels
#    It ends by saying how much travels to the device machine (at most 64 MiB, the wheels
#    included), and how to leave the committed results out of the call if that is too much.
# 2. On the GPU machine, from the repository root, with .whl/ carried along (it is ignored, so
#    name it: the device runner's carry [".whl"]):
#        bash scripts/gpu_check.sh OUT            # at most about 8 minutes on one H100
#        bash scripts/gpu_check.sh OUT --small    # tiny sizes: a few minutes on a 2-core CPU
#    It installs the wheels into /tmp/site (no index, no dependency resolution) and puts the
#    repository and /tmp/site on PYTHONPATH, then runs each step under a time limit, its output
#    tee'd to OUT/<step>.log, and goes on past a failed step (OUT/steps.tsv: step, exit code
#    (124: out of time), seconds):
#      versions   package versions, jax.devices()                 OUT/versions.json
#      bench      `marl bench` of 5 tasks at 1 to 65,536 envs      OUT/bench_<task>.json
#                 with --vs (JaxMARL: particle, combat; CAMAR: pathfinding; cleanup: none)
#      train_*    MAPPO on particle/spread, QMIX on combat/3m:     OUT/runs/, OUT/train.json
#                 10 seeds vmapped, and 10 seeds one after another
#      tests      env-contract and learner unit tests, pytest -x   OUT/tests.log
#      report     all of it as markdown                            OUT/bench_gpu.md
#    Numbers that hold up go to results/bench_gpu.md.
#
# Time: GPU_CHECK_BUDGET seconds (default 470) bound the whole script. No bench cell starts
# after 38% of it, training runs end by 72% and the tests by 99% (150 s at most). Bench cells
# run from the smallest size to the largest, so a cut costs the biggest ones first.
# Again with the same OUT: bench cells already measured are kept (failed ones measured again
# with GPU_CHECK_RETRY=1), finished training runs are kept, the rest runs. GPU_CHECK_ONLY
# picks phases (default "bench train tests"); GPU_CHECK_SIZES overrides the sizes.
set -u

cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "${1:-}" = "--wheels" ]; then
    mkdir -p .whl .git/info
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
    list=$(mktemp)
    grep -v '^antlr4-python3-runtime' scripts/gpu_wheels.txt >"$list"
    "$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 -d .whl -r "$list" || exit 1
    rm -f "$list"
    # antlr4-python3-runtime 4.9.3 (hydra's) is published as an sdist only: build its wheel
    "$PY" -m pip wheel --no-deps -w .whl "$(grep '^antlr4-python3-runtime' scripts/gpu_wheels.txt)" ||
        exit 1
    ls .whl && du -sh .whl
    # What travels to the device machine: tracked and untracked-not-ignored files, plus .whl/
    travel=$( (git ls-files -z; git ls-files -z --others --exclude-standard) |
        xargs -0 du -cb 2>/dev/null | awk '$2 == "total" {s += $1} END {print s}')
    travel=$((travel + $(du -sb .whl | cut -f1)))
    echo "travels to the device machine: $((travel / 1048576)) MiB of its 64 MiB"
    if [ "$travel" -gt $((64 * 1048576)) ]; then
        echo "over the limit: leave results/ out of this call's tree, and put it back after:" >&2
        echo "  git rm -r -q --cached results && echo /results/ >>.git/info/exclude" >&2
        echo '  (after) git reset -q results && sed -i "\\#^/results/\$#d" .git/info/exclude' >&2
    fi
    exit 0
fi

if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: bash scripts/gpu_check.sh OUTDIR [--small] | --wheels" >&2
    exit 2
fi
SMALL=0
[ "${2:-}" = "--small" ] && SMALL=1
mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
START=$(date +%s)
echo "# gpu_check $* at $(date -u +%FT%TZ)" >>"$OUT/steps.tsv"
ONLY=" ${GPU_CHECK_ONLY:-bench train tests} "

TASKS="particle/spread combat/3m combat/2s3z pathfinding/random_grid cleanup/comm"
if [ "$SMALL" = 1 ]; then
    SIZES=${GPU_CHECK_SIZES:-1,16}
    STEPS=1:25,16:10 # steps per env per timed call, by size
    REPEATS=2
    SEEDS=2
    MAPPO_BUDGET=4096 # 2 updates of 16 envs x 128 steps per seed
    QMIX_BUDGET=256   # 4 updates of 8 envs x 8 steps per seed
    TEST_FILES="tests/test_networks.py tests/test_decpomfc.py"
    WORKERS=2
    BUDGET=${GPU_CHECK_BUDGET:-1800}
else
    SIZES=${GPU_CHECK_SIZES:-1,1024,16384,65536}
    STEPS=1:200,1024:100,16384:50,65536:20
    REPEATS=3
    SEEDS=10
    MAPPO_BUDGET=102400 # 50 updates of 2,048 steps per seed
    QMIX_BUDGET=12800   # 200 updates of 64 steps per seed
    # about 680 s of tests on the 2-core CPU (CI's durations): envs and wrappers, each family's
    # env tests, the learners' unit tests; not the peer-fidelity, CLI or slow ones
    TEST_FILES="tests/test_envs.py tests/test_wrappers.py tests/test_cleanup.py
        tests/test_pathfinding.py tests/test_combat.py tests/test_onpolicy.py
        tests/test_happo.py tests/test_qlearner.py tests/test_qlearning_pieces.py
        tests/test_networks.py tests/test_decpomfc.py"
    WORKERS=12
    BUDGET=${GPU_CHECK_BUDGET:-470}
fi
BENCH_END=$((START + BUDGET * 38 / 100)) # no bench cell starts later
TRAIN_END=$((START + BUDGET * 72 / 100))
TEST_END=$((START + BUDGET * 99 / 100))
# evaluations are not what is timed: two, short, and no re-evaluation of the best parameters
PROTOCOL="protocol.num_evaluations=2 protocol.eval_episodes=8 protocol.absolute_episodes=0"

left() { # seconds until $1, at least $2 (default 10)
    local s=$(($1 - $(date +%s)))
    [ "$s" -lt "${2:-10}" ] && s=${2:-10}
    echo "$s"
}

# step NAME LIMIT_S CMD...: run CMD under `timeout`, its output tee'd to OUT/NAME.log; records
# NAME, exit code (124: time limit) and seconds in OUT/steps.tsv
step() {
    local name=$1 limit=$2 t0 rc ms
    shift 2
    t0=$(date +%s%N)
    echo
    echo "=== $name (limit ${limit}s): $*"
    timeout --kill-after=15 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
    rc=${PIPESTATUS[0]}
    ms=$((($(date +%s%N) - t0) / 1000000))
    printf '%s\t%s\t%d.%03d\n' "$name" "$rc" $((ms / 1000)) $((ms % 1000)) >>"$OUT/steps.tsv"
    echo "=== $name: exit $rc after $((ms / 1000))s"
}

# --- install ---------------------------------------------------------------------------------
if ! ls .whl/*.whl >/dev/null 2>&1; then
    echo "no wheels in .whl/: run 'bash scripts/gpu_check.sh --wheels' where an index is" \
        "reachable, and carry .whl along" >&2
fi
rm -rf /tmp/site
step install 180 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}

(command -v nvidia-smi >/dev/null && nvidia-smi -L) >"$OUT/nvidia-smi.txt" 2>&1
step versions 120 "$PY" scripts/gpu_check.py versions "$OUT"

# --- (a) env throughput ----------------------------------------------------------------------
# One process measures every cell (task x size), each through `marl bench`; a crash starts the
# loop again, which records the cell it died in as crashed and goes on.
bench_loop() {
    local try
    for try in 1 2 3 4; do
        # shellcheck disable=SC2086
        "$PY" scripts/gpu_check.py bench "$OUT" --tasks $TASKS --sizes "$SIZES" \
            --steps "$STEPS" --repeats "$REPEATS" --deadline "$BENCH_END" \
            $([ "${GPU_CHECK_RETRY:-0}" = 1 ] && echo --retry) && return 0
        echo "bench loop exited with $? (try $try); starting it again" >&2
    done
    return 1
}
if [[ $ONLY == *" bench "* ]]; then
    export -f bench_loop
    export OUT TASKS SIZES STEPS REPEATS BENCH_END PY
    step bench "$(left $((BENCH_END + 25)))" bash -c bench_loop
fi

# --- (b) training: seeds vmapped vs one after another ----------------------------------------
XLA_CACHE=/tmp/gpu_check_xla_cache
train_pair() { # ALGO ENV BUDGET END
    local algo=$1 env=$2 budget=$3 end=$4 dir
    local runs=$OUT/runs/${env%%/*}/${env#*/}/$algo
    for dir in "$runs"/vmapped "$runs"/sequential-seed_*; do # a killed run starts anew
        [ -d "$dir" ] && [ ! -f "$dir/final.json" ] && rm -rf "$dir"
    done
    # JAX's persistent compilation cache lets each sequential run after the first load the
    # first one's programs (steps/s excludes compilation either way)
    if [ ! -f "$runs/vmapped/final.json" ]; then
        step "train_${algo}_vmapped" "$(left "$end")" env JAX_COMPILATION_CACHE_DIR="$XLA_CACHE" \
            JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0.5 \
            "$PY" -m marl.cli train env="$env" algo="$algo" seeds="$SEEDS" budget="$budget" \
            out="$OUT/runs" name=vmapped checkpoint=false $PROTOCOL
    fi
    # finished runs of the sweep are skipped by `marl sweep` itself
    step "train_${algo}_sequential" "$(left "$end")" env JAX_COMPILATION_CACHE_DIR="$XLA_CACHE" \
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0.5 \
        "$PY" -m marl.cli sweep env="$env" algo="$algo" seeds=1 seed="$(seq -s, 0 $((SEEDS - 1)))" \
        budget="$budget" out="$OUT/runs" name=sequential checkpoint=false $PROTOCOL \
        --report "$OUT/runs/report-$algo-sequential"
}
if [[ $ONLY == *" train "* ]]; then
    rm -rf "$XLA_CACHE" # programs compiled by this invocation only
    now=$(date +%s)
    train_pair mappo particle/spread "$MAPPO_BUDGET" $((now + (TRAIN_END - now) * 45 / 100))
    train_pair qmix combat/3m "$QMIX_BUDGET" "$TRAIN_END"
    step train_summary 60 "$PY" scripts/gpu_check.py train-summary "$OUT"
fi

# --- (c) unit tests --------------------------------------------------------------------------
if [[ $ONLY == *" tests "* ]]; then
    limit=$(left "$TEST_END" 20)
    [ "$limit" -gt 150 ] && limit=150
    # shellcheck disable=SC2086
    step tests "$limit" "$PY" -m pytest -x -q -p no:cacheprovider -n "$WORKERS" --dist load \
        -k "not jaxmarl and not fidelity" $TEST_FILES
fi

# --- (d) report ------------------------------------------------------------------------------
"$PY" scripts/gpu_check.py report "$OUT" $([ "$SMALL" = 1 ] && echo --small) 2>&1 |
    tee "$OUT/report.log"
echo
cat "$OUT/bench_gpu.md"
echo
echo "gpu_check: $(($(date +%s) - START)) s in all; results in $OUT"
