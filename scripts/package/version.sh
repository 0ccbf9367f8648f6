#!/bin/sh
# The package's version from `git describe`: a tag v1.2.3 gives 1.2.3, and N commits after it
# 1.2.3+git<N>.<hash>; with no tag yet, 0~git<commits>.<hash>. A tree with uncommitted changes
# adds +dirty, so such a build never passes for the commit's.
set -eu
describe=$(git describe --tags --long --match 'v[0-9]*' --dirty=.dirty 2>/dev/null) || describe=""
if [ -n "$describe" ]; then
    echo "$describe" | sed -E 's/^v//; s/-0-g[0-9a-f]+//; s/-([0-9]+)-g([0-9a-f]+)/+git\1.\2/; s/\.dirty$/+dirty/'
else
    dirty=$(git diff --quiet HEAD 2>/dev/null && echo "" || echo "+dirty")
    echo "0~git$(git rev-list --count HEAD).$(git rev-parse --short HEAD)$dirty"
fi
