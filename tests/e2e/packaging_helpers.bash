# Helpers for tests/e2e/packaging.bats: where the build tree and its generated files are, and
# driving the bash, fish and zsh completions without an interactive shell.
# shellcheck shell=bash

SRC_DIR=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BUILD_DIR=$(cd "$(dirname "$RL")" && pwd)
COMPLETIONS="$BUILD_DIR/completions"

# The version in project(... VERSION X.Y.Z) of the top CMakeLists.txt.
project_version() {
    sed -n 's/^project(redlock-run VERSION \([0-9][0-9.]*\).*/\1/p' "$SRC_DIR/CMakeLists.txt"
}

need_build_tree() {
    [ -f "$BUILD_DIR/CMakeCache.txt" ] || skip "$RL is not in a CMake build tree"
}

# Options "-x,--long" or "--long" as the binary's --help lists them, one per line.
help_options() {
    "$RL" --help | grep -oE '^  (-[A-Za-z],)?--[a-z][a-z-]*' | sed 's/^ *//' | sort
}

# The same pairs from packaging/completions/options.list.
table_options() {
    grep -v '^#' "$SRC_DIR/packaging/completions/options.list" | grep . |
        awk -F'|' '{ print ($2 == "" ? $3 : $2 "," $3) }' | sort
}

# bash_complete LINE: the candidates bash offers at the end of LINE, one per line, sorted.
bash_complete() {
    bash -c '
        source /usr/share/bash-completion/bash_completion
        source "$1"
        COMP_LINE=$2 COMP_POINT=${#2}
        read -ra COMP_WORDS <<< "$2"
        [[ $2 == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        _redlock_run redlock-run "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}"' _ "$COMPLETIONS/redlock-run" "$1" 2>/dev/null | sort -u
}

# fish_complete LINE: the candidates fish offers at the end of LINE (without descriptions).
fish_complete() {
    fish -c 'source $argv[1]; complete -C $argv[2]' "$COMPLETIONS/redlock-run.fish" "$1" |
        cut -f1 | sort -u
}

# zsh_complete LINE: what the zsh completion function asks zsh to offer at the end of LINE, with
# zsh's completion builtins replaced by stubs that print their arguments: "options --ttl",
# "value term", "files", "message duration ...", "command ls -", "name ...".
zsh_complete() {
    zsh -f -c '
        compadd() { while [[ $1 == -* && $1 != -- ]]; do shift; done; [[ $1 == -- ]] && shift
                    print -l -- "value "$^@; }
        _describe() { local -a a; a=("${(@P)${@[-1]}}"); print -l -- "$2 "${^a%%:*}; }
        _files() { print -- files $*; }
        _message() { print -- "message ${@[-1]}"; }
        _normal() { print -- "command ${words[1,CURRENT]}"; }
        compset() { PREFIX=${PREFIX#*=}; }
        fpath=("$1" $fpath)
        autoload -Uz _redlock-run
        words=(${(z)2})
        [[ $2 == *" " ]] && words+=("")
        CURRENT=${#words}
        PREFIX=$words[-1]
        _redlock-run' _ "$COMPLETIONS" "$1" | sort -u
}

# dpkg_retry ARGS...: dpkg ARGS, retried for up to a minute while another apt or dpkg run holds
# the dpkg lock (other work on the same machine may be installing packages).
dpkg_retry() {
    local deadline=$((SECONDS + 60)) out status
    while :; do
        status=0
        out=$(dpkg "$@" 2>&1) || status=$?
        if [ "$status" -ne 0 ] && [[ $out == *"lock"* ]] && [ "$SECONDS" -lt "$deadline" ]; then
            sleep 1
            continue
        fi
        printf '%s\n' "$out"
        return "$status"
    done
}

# The sonames the binary under test links (DT_NEEDED), one per line.
needed_libraries() {
    readelf -d "$RL" | sed -n 's/.*(NEEDED).*Shared library: \[\(.*\)\]/\1/p'
}

# library_package SONAME: the Debian package that ships SONAME on this machine.
library_package() {
    local path
    path=$(/sbin/ldconfig -p | awk -v l="$1" '$1 == l && /x86-64|AArch64|64bit/ { print $NF; exit }')
    [ -n "$path" ] || path=$(/sbin/ldconfig -p | awk -v l="$1" '$1 == l { print $NF; exit }')
    path=$(realpath "$path")
    dpkg -S "$path" 2>/dev/null || dpkg -S "/usr$path" 2>/dev/null || dpkg -S "${path#/usr}"
}
