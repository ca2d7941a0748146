#!/usr/bin/env bash
# A benchmark's GPU-tier cells on a lent GPU machine (issue 38): trains the cells the globs
# name, one after another, until a deadline, and packs every finished cell's record for the
# trip back. The machine has no network and is given back after the call, so:
#   - marl's own dependencies come from the wheels carried in .whl/ (as scripts/gpu_check.sh;
#     `bash scripts/gpu_check.sh --wheels` fetches them where an index is reachable);
#   - cells train with `marl benchmark run --no-checkpoint` (nothing could resume from a
#     checkpoint, and a replay buffer's costs GBs per segment): a cell cut short is lost, so
#     name the cells that fit, cheapest first;
#   - OUT/cells.tgz holds the finished cells' run folders (records, curves, config; no
#     parameters or checkpoints), to unpack over the repository root here:
#         tar xzf cells.tgz        # -> results/benchmark/v1/<task>/<learner>/v1/
#
#   bash scripts/gpu_cells.sh OUT GLOB...
#       GPU_CELLS_BUDGET   seconds for the whole script (default 540); no cell starts with
#                          less than GPU_CELLS_MIN_S left (default 60), and each runs under
#                          `timeout` for what is left
#       GPU_CELLS_BENCH    the benchmark, a name or a yaml path (default v1)
#       GPU_CELLS_TIER     its tier (default gpu)
# e.g. bash scripts/gpu_cells.sh /tmp/out 'combat/5m_vs_6m/qmix' 'combat/2s3z/ippo'
# OUT/cells.tsv: glob, exit code (124: out of time), seconds; OUT/<n>.log each cell's output.
set -u

cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ $# -lt 2 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: bash scripts/gpu_cells.sh OUTDIR GLOB..." >&2
    exit 2
fi
mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
shift
START=$(date +%s)
END=$((START + ${GPU_CELLS_BUDGET:-540}))
MIN_S=${GPU_CELLS_MIN_S:-60}
BENCH=${GPU_CELLS_BENCH:-v1}
TIER=${GPU_CELLS_TIER:-gpu}

if ls .whl/*.whl >/dev/null 2>&1; then
    rm -rf /tmp/site
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl >"$OUT/install.log" 2>&1 ||
        echo "wheel install failed (OUT/install.log); going on with what is installed" >&2
    export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
(command -v nvidia-smi >/dev/null && nvidia-smi -L) >"$OUT/nvidia-smi.txt" 2>&1

# every cell is checked (names, overrides) before any trains: a typo fails here, in one line
only=()
for glob in "$@"; do only+=(--only "$glob"); done
"$PY" -m marl.cli benchmark status "$BENCH" --tier "$TIER" "${only[@]}" >"$OUT/status.log" 2>&1 ||
    { cat "$OUT/status.log" >&2; exit 2; }

k=0
for glob in "$@"; do
    k=$((k + 1))
    left=$((END - $(date +%s)))
    if [ "$left" -lt "$MIN_S" ]; then
        echo "=== $glob: not started (${left}s left)"
        printf '%s\tnot started\t0\n' "$glob" >>"$OUT/cells.tsv"
        continue
    fi
    echo "=== [$k/$#] $glob (at most ${left}s)"
    t0=$(date +%s)
    PYTHONUNBUFFERED=1 timeout --kill-after=15 "$left" "$PY" -m marl.cli benchmark run "$BENCH" \
        --tier "$TIER" --only "$glob" --no-checkpoint 2>&1 | tee "$OUT/$k.log"
    rc=${PIPESTATUS[0]}
    printf '%s\t%s\t%s\n' "$glob" "$rc" $(($(date +%s) - t0)) >>"$OUT/cells.tsv"
done

# the run folders this call finished: written since START and complete (record.json, the run's
# last write: `has_record`; a meta.json that reads finished without it died in its final write)
"$PY" - "$BENCH" "$START" "$OUT/cells.txt" <<'EOF'
import json, sys
from pathlib import Path
from marl.results.protocol import has_record
from marl.run.campaigns.benchmark import load

records = Path(load(sys.argv[1])["records"])
done = sorted(
    str(meta.parent)
    for meta in records.glob("**/meta.json")
    if meta.stat().st_mtime >= int(sys.argv[2])
    and json.loads(meta.read_text()).get("finished")
    and has_record(meta.parent)
)
Path(sys.argv[3]).write_text("".join(f"{d}\n" for d in done))
print(f"{len(done)} cell(s) finished in this call under {records}")
EOF
if [ -s "$OUT/cells.txt" ]; then
    tar czf "$OUT/cells.tgz" --exclude='*.msgpack' --exclude='checkpoint' -T "$OUT/cells.txt"
    tar tzf "$OUT/cells.tgz" | grep 'record.json$'
fi
cat "$OUT/cells.tsv"
echo "gpu_cells: $(($(date +%s) - START)) s in all; results in $OUT"
