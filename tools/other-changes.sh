#!/bin/bash
# Changes outside the grid of tools/change-figures.sh (docs/policy.md, "Other changes"): costs
# per epoch that move at some sizes only (some picked by a range of batch sizes), epochs that
# rise at a range only, epochs that fall (at some sizes, or at all), a change
# in the first recurrences (the fifth, and the second: right after the job was set up), two
# changes in one life (one that undoes the first), epochs x3 (past the grid's 2). One row per
# change: the phase after it, geometric mean of the ratio to that phase's oracle over the 12
# workload x GPU cells, under Zeus's policy and the bso policy, bso's worst cell, and the
# recurrences (over 20 seeds) whose first five launches trained no model.
# Usage: tools/other-changes.sh [BUILD_DIR] [SEEDS] [BSO_SIM_ARGS]
#   (default build/release, 1-20, none; e.g. "--declare-changes yes")
set -eu
build=${1:-build/release}
seeds=${2:-1-20}
extra=${3:-} # split into words on purpose: several bso-sim arguments
traces=${BSO_TRACES:-../shared/traces}
work=$(mktemp -d) # each replay's files, replaced by the next; removed at the end
trap 'rm -rf "$work"' EXIT
echo "| change | zeus | bso | bso worst cell | no model (zeus / bso) |"
echo "|---|---|---|---|---|"
for c in "20:time=2.0@>opt" "20:time=2.0@<opt" "20:time=2.0@>=opt" "20:time=2.0@<=opt" \
         "20:time=1.5@opt" "20:time=1.3@<=opt" "20:time=1.6@8-48" "20:epochs=1.5@32-128" \
         "20:time=0.7@>=opt" "20:time=0.5@<opt" "20:epochs=0.6@>=opt" "20:epochs=0.6@<=opt" \
         "5:epochs=1.6@<=opt" "15:epochs=1.6@>=opt;35:epochs=0.7" "30:epochs=0.5" \
         "10:epochs=1.6@<=opt;30:epochs=0.625@<=opt" "2:epochs=2.0@<=opt" "2:epochs=2.0" \
         "25:epochs=3.0@<=opt" "25:epochs=3.0@>=opt"; do
    out=$("$build/bso-sim" --traces "$traces" --gpu v100,a40 --policy zeus,bso --seeds "$seeds" \
        --recurrences 60 --change "$c" $extra --out "$work" | grep "after a change")
    echo "$out" | awk -v c="$c" '
        / zeus\// { z = $7; zn = $10 } / bso\// { b = $7; bw = $9; bn = $10 }
        END { gsub(",", "", z); gsub(",", "", b); gsub(",", "", bw)
              printf "| `%s` | %s | %s | %s | %s / %s |\n", c, z, b, bw, zn, bn }'
done
