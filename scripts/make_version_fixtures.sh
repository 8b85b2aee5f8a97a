#!/bin/bash
# One small real fixture per torch version: tests/versions/torch_<version>/ holds the 3-rank Gloo
# stall of python/desync_jobs/version_fixture.py recorded by that torch (pickle dumps, JSON where
# that torch has it). Usage: scripts/make_version_fixtures.sh PYTHON...  (one interpreter per torch).
# The job runs from /tmp/desync-jobs/version_fixture/train.py so that the dumps' frames name no
# path of this checkout; src/train.py is the same file, for --source-root.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
job=/tmp/desync-jobs/version_fixture
mkdir -p $job && cp "$repo/python/desync_jobs/version_fixture.py" $job/train.py
for py in "$@"; do
  version=$("$py" -c 'import torch; print(torch.__version__.split("+")[0])')
  out="$repo/tests/versions/torch_$version"
  rm -rf "$out" && mkdir -p "$out/src"
  (cd $job && "$py" train.py "$out" > "$out.log" 2>&1) || { echo "$version: job failed, see $out.log"; continue; }
  rm -f "$out.log"
  cp $job/train.py "$out/src/train.py"
  fr=$("$py" -c 'import pickle,sys; print(pickle.load(open(sys.argv[1],"rb"))["version"])' "$out/dumps/rank_0")
  cat > "$out/expected.json" <<JSON
{
  "torch": "$version",
  "fr_version": "$fr",
  "category": "stall",
  "culprit_ranks": [2],
  "collective_seq_id": 4,
  "notes": "Rank 2 breaks out of the loop before step 4's all_reduce (train.py, 'if rank == STOP_RANK and step == STOP_STEP: break'); ranks 0 and 1 wait in that all_reduce (seq 4) until Gloo's 4 s timeout."
}
JSON
  echo "$version: $(du -sh "$out" | cut -f1), FR version $fr"
done
