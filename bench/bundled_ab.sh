#!/bin/bash
# The bundled model's default run (answer-first, sample corpus) in this tree against another checkout, alternating
# ABBA round by round on copies of one ingested project per tree, same seeds: wall seconds and accepted/rejected per
# round. Prints, asserts nothing. Both trees run on this tree's .venv (PYTHONPATH picks the code).
#   git worktree add /tmp/old COMMIT && bench/bundled_ab.sh /tmp/old [COUNT=20] [ROUNDS=4] [FIRST_SEED=80]
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: bench/bundled_ab.sh OLD_TREE [COUNT] [ROUNDS] [FIRST_SEED]}
COUNT=${2:-20}; ROUNDS=${3:-4}; SEED=${4:-80}
PY=$PWD/.venv/bin/python
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
tree_of() { [ "$1" = old ] && echo "$OLD" || echo "$PWD"; }
for tree in old new; do
  T=$(tree_of $tree)
  PYTHONPATH=$T $PY -m curator init "$W/$tree.curator" > /dev/null
  PYTHONPATH=$T $PY -m curator ingest "$W/$tree.curator" "$T/curator/resources/sample_corpus" > /dev/null
done
declare -A seconds=([old]=0 [new]=0)
for ((round = 0; round < ROUNDS; round++)); do
  order="old new"; [ $((round % 2)) = 1 ] && order="new old"
  for tree in $order; do
    T=$(tree_of $tree)
    cp "$W/$tree.curator" "$W/$tree-$round.curator"
    start=$(date +%s.%N)
    PYTHONPATH=$T $PY -m curator generate "$W/$tree-$round.curator" --count "$COUNT" --seed $((SEED + round)) \
      --threads 2 --json > "$W/out.json" 2> /dev/null || true
    took=$($PY -c "print(round($(date +%s.%N) - $start, 1))")
    seconds[$tree]=$($PY -c "print(${seconds[$tree]} + $took)")
    echo "round $round $tree: $took s; $($PY -c 'import json, sys; d = json.load(open(sys.argv[1]));
print("accepted", d.get("accepted"), "rejected", d.get("rejected"))' "$W/out.json"); load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
echo "old ${seconds[old]} s, new ${seconds[new]} s for $((COUNT * ROUNDS)) rows each: new $($PY -c \
  "print(round(${seconds[old]} / ${seconds[new]}, 2))")x the old tree's accepted rows/min"
