#!/bin/bash
cd /tmp
# cold `ask --no-answer --strategy ppr` in a new process: before (12662cd, torch for the query) vs now (numpy)
W=/root/.cache/localrag/bench/2wiki-3d074147bc
Q="Where was the director of film Emile The African born?"
for tree in /tmp/dev/before-numpy /work/main; do
  for i in 1 2 3 4 5 6; do
    /usr/bin/time -f "$tree %e s wall %U s user %S s sys" env PYTHONPATH=$tree /work/main/.venv/bin/python -m localrag ask "$Q" -f $W/notes --db $W/index.db --no-answer --strategy ppr --no-sync > /dev/null 2>> /tmp/dev/coldask.err
  done
done
