#!/bin/bash
# ppr recall on the three dev sets, the same cached bench indexes, with the code before the seed-lookup
# change (cbc9a7f, checked out as a worktree) and after. Run from the repository root; the bench runs from
# /tmp because `python -m` puts the working directory first on sys.path.
set -e
ROOT=$(pwd)
git worktree add -f /tmp/before16 cbc9a7f -q
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
cd /tmp
for tree in after before; do
  if [ $tree = before ]; then export PYTHONPATH=/tmp/before16; else export PYTHONPATH=$ROOT; fi
  for set in "2wiki/dev 2wiki/dev_ids.txt 2wiki-dev" "musique100 musique100/dev_ids.txt musique100-dev" \
             "hotpotqa100 hotpotqa100/dev_ids.txt hotpotqa100-dev"; do
    read -r data ids name <<< "$set"
    $ROOT/.venv/bin/python -m localrag bench --data $ROOT/../shared/data/$data --ids $ROOT/../shared/data/$ids \
      --strategy ppr --quiet --out $ROOT/docs/results/issue16/$name-ppr-$tree.json
  done
done
cd $ROOT && git worktree remove --force /tmp/before16
