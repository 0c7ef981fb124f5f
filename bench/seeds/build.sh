#!/usr/bin/env bash
# Builds the seed papers' own programs from their public sources at pinned commits.
#
#   bench/seeds/build.sh [--src DIR] [--out DIR] NAME...|all
#
# For each NAME, bench/seeds/recipes/NAME.sh sets UPSTREAM (git URL), COMMIT (pinned,
# 40 hex digits) and defines build SRC OUT. With --src DIR the source tree is DIR/NAME
# (no network); without it the script clones UPSTREAM at COMMIT into build/seeds-src/NAME
# (or $SEEDS_CACHE/NAME).
# Outputs go to OUT/NAME (default build/seeds/NAME; build/ is git-ignored), mode 0700;
# a recipe builds in a scratch copy (work_copy SRC DEST), never in the given source tree.
# Exit status: 0 when every NAME built, 1 when one failed, 2 on bad usage.
# No third-party source is kept in the repository.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
recipes="${SEEDS_RECIPES:-$here/recipes}"   # another recipe folder: for tests
src_dir=""
out_dir="$root/build/seeds"

die() {
    echo "build.sh: $*" >&2
    exit 2
}

# Inside one program's build: one line, then that program stops (the others go on).
fail() {
    echo "build.sh: $*" >&2
    exit 64
}

# For recipes: a scratch copy of a source tree, so a given --src directory is never written.
work_copy() { # SRC DEST
    rm -rf "$2"
    mkdir -p "$2"
    (cd "$1" && tar --exclude=.git -cf - .) | (cd "$2" && tar -xf -)
}

names=()
while [ $# -gt 0 ]; do
    case "$1" in
    --src)
        [ $# -ge 2 ] || die "--src needs a directory"
        src_dir="$2"
        shift 2
        ;;
    --src=*)
        src_dir="${1#--src=}"
        shift
        ;;
    --out)
        [ $# -ge 2 ] || die "--out needs a directory"
        out_dir="$2"
        shift 2
        ;;
    --out=*)
        out_dir="${1#--out=}"
        shift
        ;;
    -h | --help)
        sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    -*) die "unknown option $1 (usage: build.sh [--src DIR] [--out DIR] NAME...|all)" ;;
    *)
        names+=("$1")
        shift
        ;;
    esac
done

[ ${#names[@]} -gt 0 ] || die "no program named (usage: build.sh [--src DIR] [--out DIR] NAME...|all)"
if [ "${names[0]}" = all ] && [ ${#names[@]} -eq 1 ]; then
    names=()
    for f in "$recipes"/*.sh; do
        n="$(basename "$f" .sh)"
        names+=("$n")
    done
fi
if [ -n "$src_dir" ]; then
    [ -d "$src_dir" ] || die "source directory $src_dir does not exist"
    src_dir="$(cd "$src_dir" && pwd)"
fi

fetch_source() { # NAME UPSTREAM COMMIT DEST
    local name="$1" upstream="$2" commit="$3" dest="$4"
    if [ -d "$dest/.git" ] && [ "$(git -C "$dest" rev-parse HEAD 2>/dev/null)" = "$commit" ]; then
        return 0
    fi
    rm -rf "$dest"
    mkdir -p "$dest"
    if ! { git -C "$dest" init -q &&
        git -C "$dest" remote add origin "$upstream" &&
        GIT_TERMINAL_PROMPT=0 git -C "$dest" fetch -q --depth 1 origin "$commit" &&
        git -C "$dest" checkout -q FETCH_HEAD; } >/dev/null 2>&1; then
        rm -rf "$dest"
        fail "$name: cannot clone $upstream at $commit; pass --src DIR with DIR/$name holding that source"
    fi
}

mkdir -p "$out_dir"
chmod 0700 "$out_dir"
out_dir="$(cd "$out_dir" && pwd)"
status=0
for name in "${names[@]}"; do
    recipe="$recipes/$name.sh"
    [ -f "$recipe" ] || die "no recipe for $name (have: $(cd "$recipes" && ls -- *.sh | sed 's/\.sh$//' | tr '\n' ' '))"
    # Not "( ... ) || ...": set -e would be off inside a tested subshell.
    set +e
    (
        set -euo pipefail
        UPSTREAM=""
        COMMIT=""
        unset -f build 2>/dev/null || true
        # shellcheck source=/dev/null
        . "$recipe"
        [ -n "$UPSTREAM" ] || fail "$name: recipe sets no UPSTREAM"
        [[ "$COMMIT" =~ ^[0-9a-f]{40}$ ]] || fail "$name: recipe COMMIT is not 40 hex digits"
        declare -F build >/dev/null || fail "$name: recipe defines no build function"
        if [ -n "$src_dir" ]; then
            src="$src_dir/$name"
            [ -d "$src" ] || fail "$name: source directory $src does not exist"
        else
            src="${SEEDS_CACHE:-$root/build/seeds-src}/$name"
            fetch_source "$name" "$UPSTREAM" "$COMMIT" "$src"
        fi
        out="$out_dir/$name"
        mkdir -p "$out"
        chmod 0700 "$out"
        echo "build.sh: $name from $src at ${COMMIT:0:12} -> $out" >&2
        build "$src" "$out"
        printf '%s\n' "name=$name" "upstream=$UPSTREAM" "commit=$COMMIT" "src=$src" \
            "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$out/BUILD-INFO"
    )
    rc=$?
    set -e
    if [ $rc -ne 0 ]; then
        [ $rc -eq 64 ] || echo "build.sh: $name: build failed (exit $rc)" >&2
        status=1
    fi
done
exit $status
