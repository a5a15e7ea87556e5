#!/usr/bin/env bash
# Two ranks sharing one persistent cache directory, run twice: the first run
# compiles (each rank may write the same entries; writes are atomic), the
# second compiles nothing on either rank and trains to the same loss.
#   shared_cache.sh MPIRUN PROGRAM DIRECTORY
set -euo pipefail
mpirun=$1 program=$2 directory=$3
rm -rf "$directory"
export KILN_CACHE=on KILN_CACHE_DIR=$directory
first=$("$mpirun" -np 2 "$program" 10)
second=$("$mpirun" -np 2 "$program" 10)
echo "$first"
echo "$second"
grep -q "train_step cache: 1 compile(s), 0 loaded" <<<"$first"
grep -q "train_step cache: 0 compile(s), 1 loaded" <<<"$second"
loss() { grep -o 'step   10  loss [0-9.]*' <<<"$1"; }
[ "$(loss "$first")" = "$(loss "$second")" ]
echo "shared cache ok"
