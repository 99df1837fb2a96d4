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

# Options "-x,--long" or "--long" as the binary's --help-all lists them ("  -t, --ttl ..." or
# "      --min-hold ..."), one per line.
help_options() {
    "$RL" --help-all | grep -oE '^(  -[A-Za-z], |      )--[a-z][a-z-]*' | sed 's/^ *//; s/, /,/' | sort
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
# "value term" (after compadd's -P prefix, if any), "files", "message duration ...",
# "command ls -", "name ...".
zsh_complete() {
    zsh -f -c '
        compadd() { local p=
                    while [[ $1 == -* && $1 != -- ]]; do [[ $1 == -P ]] && { p=$2; shift; }; shift; done
                    [[ $1 == -- ]] && shift
                    (( $# )) && print -l -- "value $p"$^@; }
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

# cron_jobs SRC OUT [USER]: writes to stdout the cron.d file that runs, once, at the start of a
# cron daemon (@reboot), each job of SRC (a cron.d file, or a crontab when USER is given: its
# jobs then run as USER), keeping SRC's variable lines. Job N's stdout and stderr go to OUT/N.out
# and its exit status to OUT/N.status; the command itself is the line's, unchanged, run by cron's
# shell as cron runs it.
cron_jobs() {
    local src=$1 out=$2 user=${3:-} line n=0 rest
    local field='(\*|[0-9]+(-[0-9]+)?)(/[0-9]+)?(,(\*|[0-9]+(-[0-9]+)?)(/[0-9]+)?)*'
    local sched="^$field[[:space:]]+$field[[:space:]]+$field[[:space:]]+$field[[:space:]]+$field[[:space:]]+"
    while IFS= read -r line; do
        if [[ $line =~ ^[[:space:]]*(#|$) || $line =~ ^[A-Z_]+= ]]; then
            printf '%s\n' "$line"
            continue
        fi
        [[ $line =~ $sched(.*)$ ]] || { echo "not a cron job line: $line" >&2; return 1; }
        rest=${BASH_REMATCH[-1]}
        if [ -z "$user" ]; then
            [[ $rest =~ ^([a-z_][a-z0-9_-]*)[[:space:]]+(.*)$ ]] ||
                { echo "no user field: $line" >&2; return 1; }
            printf '%s\n' "${BASH_REMATCH[1]}" > "$out/$n.user"
            rest="${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
        else
            printf '%s\n' "$user" > "$out/$n.user"
            rest="$user $rest"
        fi
        [[ $rest != *%* ]] || { echo "% is special to cron: $line" >&2; return 1; }
        local job=${rest#* }
        printf '%s\n' "$job" > "$out/$n.command"
        printf '@reboot %s { %s; } > %s/%d.out 2>&1; echo $? > %s/%d.status\n' \
            "${rest%% *}" "$job" "$out" "$n" "$out" "$n"
        n=$((n + 1))
    done < "$src"
}

# run_cron_daemon FILE OUT: installs FILE (from cron_jobs) in /etc/cron.d, runs Debian's cron
# daemon in the foreground until every job of FILE has written OUT/N.status (20 s at most), and
# takes both away again. Needs root and no cron daemon already running.
run_cron_daemon() {
    local file=$1 out=$2 jobs name="redlock-run-test-$$-$RANDOM" pid had_reboot=0 status=0
    jobs=$(compgen -G "$out/*.command" | wc -l)
    install -m 0644 "$file" "/etc/cron.d/$name"
    # cron runs @reboot jobs only at its first start after a boot, which /run/crond.reboot records.
    [ -e /run/crond.reboot ] && had_reboot=1 && rm -f /run/crond.reboot
    cron -f &
    pid=$!
    wait_for 20 cron_jobs_done "$out" "$jobs" || status=1
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "/etc/cron.d/$name" /run/crond.pid
    [ "$had_reboot" = 1 ] || rm -f /run/crond.reboot
    [ "$status" = 0 ] || { echo "cron ran $(compgen -G "$out/*.status" | wc -l) of $jobs jobs" >&2; return 1; }
}

# cron_jobs_done OUT N: N jobs have written their exit status.
cron_jobs_done() { [ "$(find "$1" -name '*.status' -size +0 | wc -l)" -ge "$2" ]; }

# need_cron_daemon: skips unless Debian's cron can be started here, as root, with none running.
need_cron_daemon() {
    [ "$(id -u)" -eq 0 ] || skip "running cron jobs as their users needs root"
    command -v cron > /dev/null || skip "cron missing (apt-get install cron)"
    if [ -e /run/crond.pid ] && kill -0 "$(cat /run/crond.pid)" 2>/dev/null; then
        skip "a cron daemon is running on this machine; not starting another"
    fi
}
