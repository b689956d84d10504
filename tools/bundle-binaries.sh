#!/bin/bash
# Packs bso-server, bso and libbso with the shared libraries they link (glibc's own left out)
# into one folder, to run the GPU checks (tools/gpu-*.sh) on a machine that lacks this build's
# packages (libmicrohttpd, jansson, libpq, libcurl): a GPU node of another distribution, or a
# container with PyTorch and CUDA only. On that machine, `source DEST/env.sh` puts on
# LD_LIBRARY_PATH only the libraries its system does not have (its own stay in use: two builds of
# one library in a process can clash), and DEST/bin is the BUILD_DIR the checks take.
# The target's glibc must be as new as this machine's (x86-64 to x86-64 only).
# Usage: tools/bundle-binaries.sh BUILD_DIR DEST
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR DEST" >&2; exit 2; }
build=$1; dest=$2
for f in bso-server bso libbso.so; do
    [ -e "$build/$f" ] || { echo "$0: $build/$f not found (build first)" >&2; exit 1; }
done
rm -rf "$dest/bin" "$dest/lib" "$dest/missing" "$dest/env.sh"
mkdir -p "$dest/bin" "$dest/lib"
cp -L "$build/bso-server" "$build/bso" "$dest/bin/"
cp -L "$build/libbso.so" "$dest/bin/libbso.so"
cp -L "$build/libbso.so" "$dest/bin/libbso.so.0" # the soname bso links
ldd "$build/bso-server" "$build/bso" "$build/libbso.so" | awk '$3 ~ /^\// {print $3}' | sort -u |
    while read -r lib; do
        case $(basename "$lib") in
        libc.so.* | libm.so.* | libresolv.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) ;;
        libbso*) ;;
        *) cp -L "$lib" "$dest/lib/" ;;
        esac
    done
cat > "$dest/env.sh" <<'ENV'
# Sourced on the target: the bundle's libraries the system lacks go on LD_LIBRARY_PATH.
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$bundle/missing" && mkdir -p "$bundle/missing" # what this system lacks now
for f in "$bundle"/lib/*; do
    s=$(basename "$f")
    ldconfig -p | grep -q "^[[:space:]]*$s " || ln -sf "$f" "$bundle/missing/$s"
done
export LD_LIBRARY_PATH=$bundle/missing:$bundle/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ldd "$bundle"/bin/* | grep "not found"; then echo "bundle: libraries still missing" >&2; fi
ENV
echo "$dest: $(ls "$dest/bin" | wc -l) programs, $(ls "$dest/lib" | wc -l) libraries, $(du -sh "$dest" | cut -f1)"
