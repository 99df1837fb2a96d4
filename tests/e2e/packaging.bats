#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Packaging: --version, the man page, `cmake --install`, the CPack .deb (lintian, and installed
# for real when run as root), the systemd and cron examples, and the bash/zsh/fish completions.
load helpers
load packaging_helpers

bats_require_minimum_version 1.5.0

setup() {
    INSTALLED_FLAG="$BATS_FILE_TMPDIR/deb-installed"
}

teardown() {
    stop_holder
    redis_stop
    # The cron tests' users, group, files and /usr/local install, whatever failed.
    local user
    if [ -e "$BATS_TEST_TMPDIR/users" ]; then
        while read -r user; do userdel "$user" 2>/dev/null || true; done < "$BATS_TEST_TMPDIR/users"
    fi
    [ -e "$BATS_TEST_TMPDIR/group" ] && groupdel "$(cat "$BATS_TEST_TMPDIR/group")" 2>/dev/null
    [ -n "${CRON_TMP:-}" ] && rm -rf "$CRON_TMP"
    if [ -e "$BATS_TEST_TMPDIR/local-installed" ] && [ -f "$BUILD_DIR/install_manifest.txt" ]; then
        xargs rm -f < "$BUILD_DIR/install_manifest.txt"
        xargs rmdir < "$BUILD_DIR/install_created_dirs.txt" 2>/dev/null || true
    fi
    # Never leave the package behind, whatever failed.
    if [ -e "$INSTALLED_FLAG" ]; then
        dpkg_retry --purge redlock-run > /dev/null 2>&1 || true
        rm -f "$INSTALLED_FLAG"
    fi
}

# cpack_deb: builds the .deb once per file into $BATS_FILE_TMPDIR/deb and sets DEB to its path.
cpack_deb() {
    need_build_tree
    command -v dpkg-shlibdeps > /dev/null || skip "dpkg-shlibdeps missing (apt-get install dpkg-dev)"
    local out="$BATS_FILE_TMPDIR/deb"
    if ! compgen -G "$out/redlock-run_*.deb" > /dev/null; then
        mkdir -p "$out"
        (cd "$BUILD_DIR" && cpack -G DEB -B "$out") > "$out/cpack.log" 2>&1 ||
            { cat "$out/cpack.log" >&2; return 1; }
    fi
    DEB=$(compgen -G "$out/redlock-run_*.deb")
}

@test "--version prints the CMake project version, with git describe in a git build" {
    local version
    version=$(project_version)
    [ -n "$version" ]
    run "$RL" --version
    assert_success
    assert_output --regexp "^redlock-run ${version//./\\.}( \(git [0-9A-Za-z._+-]+\))?$"
    if git -C "$SRC_DIR" rev-parse --show-toplevel > /dev/null 2>&1 &&
        grep -q "^CMAKE_HOME_DIRECTORY:INTERNAL=$SRC_DIR\$" "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
        assert_output --regexp '\(git [0-9a-f]{7,}|\(git v?[0-9]'
    fi
}

@test "outside a git checkout the version is the project version alone" {
    mkdir "$BATS_TEST_TMPDIR/tarball"
    run cmake -DSOURCE_DIR="$BATS_TEST_TMPDIR/tarball" -DPROJECT_VERSION=1.2.3 \
        -P "$SRC_DIR/cmake/version.cmake"
    assert_success
    assert_output "1.2.3"
    # A tarball unpacked inside some other checkout must not take that checkout's commit.
    git init -q "$BATS_TEST_TMPDIR/other"
    git -C "$BATS_TEST_TMPDIR/other" -c user.name=t -c user.email=t@t commit -q --allow-empty -m x
    mkdir "$BATS_TEST_TMPDIR/other/unpacked"
    run cmake -DSOURCE_DIR="$BATS_TEST_TMPDIR/other/unpacked" -DPROJECT_VERSION=1.2.3 \
        -P "$SRC_DIR/cmake/version.cmake"
    assert_output "1.2.3"
    # The checkout itself is described.
    run cmake -DSOURCE_DIR="$BATS_TEST_TMPDIR/other" -DPROJECT_VERSION=1.2.3 \
        -P "$SRC_DIR/cmake/version.cmake"
    assert_output --regexp '^1\.2\.3 \(git [0-9a-f]{7,}\)$'
}

@test "the binary links none of the standard streams, which src/cli/cli11.hpp leaves unconstructed" {
    command -v nm > /dev/null || skip "nm missing (apt-get install binutils)"
    run nm -C "$RL"
    assert_success
    # The symbols are there to be read: one the program surely has.
    assert_output --partial 'redlock::parse_command_line'
    refute_output --regexp 'std::w?(cout|cerr|clog|cin)$'
}

@test "both man pages are clean under groff -ww and mandoc -Tlint and render with man" {
    command -v mandoc > /dev/null || skip "mandoc missing (apt-get install mandoc)"
    local page
    for page in redlock-run.1 redlock-run.7; do
        run mandoc -Tlint "$SRC_DIR/man/$page"
        assert_success
        assert_output ''
        # Every groff warning (-ww), on what man-db renders with on Debian.
        run --separate-stderr groff -ww -man -Tutf8 "$SRC_DIR/man/$page"
        assert_success
        [ -z "$stderr" ] || { echo "$page: $stderr" >&2; false; }
    done
    cd "$SRC_DIR"
    run env MANPAGER=cat MANWIDTH=80 man ./man/redlock-run.1
    assert_success
    assert_output --partial 'redlock-run'
    assert_output --regexp 'EXIT STATUS|EXIT CODES'
    assert_output --partial 'redlock-run(7)'
    run env MANPAGER=cat MANWIDTH=80 man ./man/redlock-run.7
    assert_success
    assert_output --partial 'SAFETY MODEL'
    assert_output --partial 'redlock-run(1)'
}

@test "the reference page stays about 1000 lines at 80 columns; the design manual is redlock-run(7)" {
    cd "$SRC_DIR"
    local lines
    lines=$(MANWIDTH=80 MANPAGER=cat man -l ./man/redlock-run.1 2>/dev/null | wc -l)
    [ "$lines" -gt 500 ] # it did render
    # At most 1000 (992 when redlock-run(7) was split off, 1107 with --ping and more, 992 again
    # once their explanations moved to redlock-run(7)): what explains rather than lists belongs
    # in redlock-run(7), which the entry points to.
    [ "$lines" -le 1000 ] || { echo "redlock-run.1 renders to $lines lines" >&2; false; }
}

@test "the man pages never break a URL scheme at its hyphen, in groff or mandoc" {
    command -v mandoc > /dev/null || skip "mandoc missing (apt-get install mandoc)"
    local page width out
    for page in "$SRC_DIR/man/redlock-run.1" "$SRC_DIR/man/redlock-run.7"; do
        # The page has them: a check that finds no scheme would prove nothing.
        grep -q 'redis\\-sentinel://' "$page"
        grep -q 'redis\\-cluster://' "$page"
        for width in 50 57 64 71 78 85 92 99 106 113 120; do
            for out in "$(MANWIDTH=$width MANPAGER=cat man -l "$page" 2>/dev/null)" \
                "$(mandoc -Tutf8 -O width=$width "$page" | col -b)"; do
                # A scheme split over two lines: "redis-" (or "redis‐") ends one line, the next
                # starts with "sentinel://" or "cluster://".
                if awk 'split_ && /^[[:space:]]*(sentinel|cluster):\/\// { print NR ": " $0; bad = 1 }
                        { split_ = /redis(-|‐)$/ } END { exit !bad }' <<< "$out" >&2; then
                    echo "$page: a redis- scheme breaks at width $width" >&2
                    return 1
                fi
                [[ $out == *redis-sentinel://* && $out == *redis-cluster://* ]]
            done
        done
    done
}

@test "cmake --install puts each file in its standard place" {
    need_build_tree
    local root="$BATS_TEST_TMPDIR/root"
    DESTDIR="$root" run cmake --install "$BUILD_DIR" --prefix /usr
    assert_success
    [ -x "$root/usr/bin/redlock-run" ]
    [ -f "$root/usr/share/man/man1/redlock-run.1" ]
    [ -f "$root/usr/share/man/man7/redlock-run.7" ]
    [ -f "$root/usr/share/bash-completion/completions/redlock-run" ]
    [ -f "$root/usr/share/zsh/vendor-completions/_redlock-run" ]
    [ -f "$root/usr/share/fish/vendor_completions.d/redlock-run.fish" ]
    [ -f "$root/usr/share/doc/redlock-run/examples/nightly-report.service" ]
    [ -f "$root/usr/share/doc/redlock-run/examples/nightly-report.timer" ]
    [ -f "$root/usr/share/doc/redlock-run/examples/redlock-run.cron" ]
    local fencing
    for fencing in README.md postgresql.sql postgresql-write.sh redis-write.sh file-write.sh; do
        [ -f "$root/usr/share/doc/redlock-run/examples/fencing/$fencing" ]
    done
    [ -f "$root/usr/share/doc/redlock-run/README.md" ]
    # Under /usr/local, zsh's completion goes where Debian's zsh looks for it there.
    root="$BATS_TEST_TMPDIR/local"
    DESTDIR="$root" run cmake --install "$BUILD_DIR" --prefix /usr/local
    assert_success
    [ -f "$root/usr/local/share/zsh/site-functions/_redlock-run" ]
    [ -x "$root/usr/local/bin/redlock-run" ]
}

@test "the .deb depends on the package of every library the binary uses, hiredis and libssl included" {
    cpack_deb
    local depends lib pkg
    depends=$(dpkg-deb -f "$DEB" Depends)
    [[ $depends =~ (^|, )libhiredis[0-9.]+\  ]]
    # libssl is loaded with dlopen for rediss://, invisible to dpkg-shlibdeps, and added apart.
    [[ $depends =~ (^|, )libssl3\ \(\>=\ 3\. ]]
    # libcurl too, for --ping only: recommended, not required.
    [ "$(dpkg-deb -f "$DEB" Recommends)" = "libcurl4 | libcurl3-gnutls" ]
    while read -r lib; do
        pkg=$(library_package "$lib")
        pkg=${pkg%%:*}
        [ -n "$pkg" ]
        # A package may come without a version constraint (libasan8 in a sanitizer build).
        [[ ", $depends," == *", $pkg "* || ", $depends," == *", $pkg,"* ]] ||
            { echo "$lib ($pkg) missing from: $depends" >&2; false; }
    done < <(needed_libraries)
    run dpkg-deb -c "$DEB"
    assert_output --partial ' ./usr/bin/redlock-run'
    # Compressed in the package (Debian policy 12.1), with the changelog that policy 12.7 wants.
    assert_output --partial ' ./usr/share/man/man1/redlock-run.1.gz'
    assert_output --partial ' ./usr/share/man/man7/redlock-run.7.gz'
    assert_output --partial ' ./usr/share/doc/redlock-run/changelog.gz'
    assert_output --partial ' ./usr/share/bash-completion/completions/redlock-run'
    assert_output --partial ' ./usr/share/zsh/vendor-completions/_redlock-run'
    assert_output --partial ' ./usr/share/fish/vendor_completions.d/redlock-run.fish'
    assert_output --partial ' ./usr/share/doc/redlock-run/examples/nightly-report.timer'
    assert_output --partial ' ./usr/share/doc/redlock-run/examples/fencing/postgresql-write.sh'
    assert_output --partial ' ./usr/share/doc/redlock-run/copyright'
    run dpkg-deb -f "$DEB" Version
    assert_output "$(project_version)"
}

@test "lintian finds no error and no warning in the .deb" {
    command -v lintian > /dev/null || skip "lintian missing (apt-get install lintian)"
    # What is shipped is an optimised build; a sanitizer build's package is not meant to be.
    ! grep -qE '^REDLOCK_SANITIZE:STRING=.+' "$BUILD_DIR/CMakeCache.txt" ||
        skip "a sanitizer build: lintian checks the release build's package"
    cpack_deb
    # lintian says it prefers not to run as root, on stderr; its findings go to stdout.
    run --separate-stderr lintian --display-info "$DEB"
    # Informational tags (I:) are allowed; errors and warnings are not.
    refute_output --regexp '(^|'$'\n'')[EW]: '
    # It did look at the package: the hardening flags are checked on the binary (no
    # hardening-no-fortify-functions even among the informational tags).
    refute_output --partial 'hardening-no-'
}

@test "the changelog's latest entry is the project version, and the package carries it" {
    cpack_deb
    run dpkg-parsechangelog -l "$SRC_DIR/packaging/changelog" -S Version
    assert_success
    assert_output "$(project_version)"
    local dir="$BATS_TEST_TMPDIR/x"
    dpkg-deb -x "$DEB" "$dir"
    cmp <(gzip -dc "$dir/usr/share/doc/redlock-run/changelog.gz") "$SRC_DIR/packaging/changelog"
    cmp <(gzip -dc "$dir/usr/share/man/man1/redlock-run.1.gz") "$SRC_DIR/man/redlock-run.1"
    cmp <(gzip -dc "$dir/usr/share/man/man7/redlock-run.7.gz") "$SRC_DIR/man/redlock-run.7"
    # gzip -n: no file name or time stamp in the header (flags byte 0, MTIME 0).
    run od -An -tx1 -j3 -N5 "$dir/usr/share/man/man1/redlock-run.1.gz"
    assert_output ' 00 00 00 00 00'
}

@test "the .deb installs with dpkg -i, runs, has its man page, and removes cleanly" {
    [ "$(id -u)" -eq 0 ] || skip "installing a package needs root"
    if dpkg-query -W -f='${Status}' redlock-run 2>/dev/null | grep -q installed ||
        [ -e /usr/bin/redlock-run ]; then
        skip "redlock-run is already installed on this machine; not touching it"
    fi
    cpack_deb
    touch "$INSTALLED_FLAG"
    run dpkg_retry -i "$DEB"
    assert_success
    run /usr/bin/redlock-run --version
    assert_success
    assert_output "$("$RL" --version)"
    run man -w redlock-run
    assert_success
    assert_output --regexp '^/usr/share/man/man1/redlock-run\.1(\.gz)?$'
    run man -w 7 redlock-run
    assert_success
    assert_output --regexp '^/usr/share/man/man7/redlock-run\.7(\.gz)?$'
    [ -f /usr/share/bash-completion/completions/redlock-run ]
    run dpkg_retry -r redlock-run
    assert_success
    rm -f "$INSTALLED_FLAG"
    [ ! -e /usr/bin/redlock-run ]
    [ ! -e /usr/share/man/man1/redlock-run.1.gz ]
    [ ! -e /usr/share/man/man7/redlock-run.7.gz ]
    [ ! -e /usr/share/doc/redlock-run ]
    run dpkg-query -W -f='${Status}' redlock-run
    refute_output --partial 'install ok installed'
}

@test "the systemd example units pass systemd-analyze verify" {
    local dir="$BATS_TEST_TMPDIR/units"
    mkdir "$dir"
    # ExecStart names redlock-run without a directory, for systemd to find in /usr/local/bin
    # (cmake --install) or /usr/bin (the .deb).
    grep -qx 'ExecStart=redlock-run .*' "$SRC_DIR/packaging/examples/nightly-report.service"
    # verify checks that ExecStart's program exists: point it at the binary under test.
    sed "s|^ExecStart=redlock-run |ExecStart=$RL |" \
        "$SRC_DIR/packaging/examples/nightly-report.service" > "$dir/nightly-report.service"
    cp "$SRC_DIR/packaging/examples/nightly-report.timer" "$dir/"
    if command -v systemd-analyze > /dev/null; then
        cd "$dir"
        run systemd-analyze verify --man=no nightly-report.service nightly-report.timer
        assert_success
        # Unknown keys and bad values are only warnings: there must be none.
        assert_output ''
    else
        # Without systemd: every line is a comment, a [Section] or Key=Value.
        run grep -vnE '^(#.*|\[(Unit|Service|Timer|Install)\]|[A-Z][A-Za-z]+=.*|)$' \
            "$dir/nightly-report.service" "$dir/nightly-report.timer"
        assert_failure 1
    fi
}

@test "the example service treats a lock busy on another host as a success" {
    redis_start
    hold_until nightly-report "$BATS_TEST_TMPDIR/gate"
    local unit="$SRC_DIR/packaging/examples/nightly-report.service" exec_start success
    exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
    success=$(sed -n 's/^SuccessExitStatus=//p' "$unit")
    [ -n "$exec_start" ] && [ -n "$success" ]
    # Run ExecStart as systemd would (no shell), with the unit's environment; the lock is held,
    # so the report must not start (it does not exist here: it would give 127).
    local -a argv
    read -ra argv <<< "$exec_start"
    [ "${argv[0]}" = redlock-run ]
    argv[0]=$RL
    run -"$success" env REDLOCK_URL="$REDIS_URL" "${argv[@]}"
    assert_output --partial "lock 'nightly-report' is held"
    touch "$BATS_TEST_TMPDIR/gate"
    wait "$HOLDER"
}

@test "the cron.d example's jobs run under the cron daemon, as their users, and skip silently" {
    need_cron_daemon
    local pw=cron-secret-$RANDOM group=rltest$$ user
    CLI_OPTS="-a $pw --no-auth-warning"
    redis_start --requirepass "$pw"
    # A directory the jobs' users can reach: the password file, redlock-run and their output.
    CRON_TMP=$(mktemp -d /tmp/redlock-run-cron.XXXXXX)
    chmod 0755 "$CRON_TMP"
    mkdir -m 0755 "$CRON_TMP/bin" && mkdir -m 1777 "$CRON_TMP/out"
    cp "$RL" "$CRON_TMP/bin/redlock-run"
    # The set-up the file's comments describe: one group for the three users, the password
    # file 0640 root:group. Users missing here are made for the test (and removed after).
    groupadd --system "$group"
    echo "$group" > "$BATS_TEST_TMPDIR/group"
    for user in $(sed -nE 's/^[^#A-Z][^ ]* +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +([a-z_][a-z0-9_-]*) .*/\1/p' \
            "$SRC_DIR/packaging/examples/redlock-run.cron"); do
        if ! id -u "$user" > /dev/null 2>&1; then
            useradd --system --no-create-home --home-dir / --shell /usr/sbin/nologin "$user"
            echo "$user" >> "$BATS_TEST_TMPDIR/users"
        fi
        usermod -a -G "$group" "$user"
    done
    printf '%s\n' "$pw" | install -m 0640 -g "$group" /dev/stdin "$CRON_TMP/cron.pass"
    # The file as shipped, with this test's Redis, password file and binary first on its PATH.
    sed -e "s|^REDLOCK_URL=.*|REDLOCK_URL=$REDIS_URL|" \
        -e "s|^REDLOCK_PASSWORD_FILE=.*|REDLOCK_PASSWORD_FILE=$CRON_TMP/cron.pass|" \
        -e "s|^PATH=|PATH=$CRON_TMP/bin:|" \
        "$SRC_DIR/packaging/examples/redlock-run.cron" > "$CRON_TMP/src"
    cron_jobs "$CRON_TMP/src" "$CRON_TMP/out" > "$CRON_TMP/cron.d"
    # Every word of each line is taken as a lock first, so each job finds its lock busy.
    local n word
    for n in $(seq 0 $(($(compgen -G "$CRON_TMP/out/*.command" | wc -l) - 1))); do
        for word in $(cat "$CRON_TMP/out/$n.command"); do
            cli "$REDIS_PORT" SET "$word" someone-else PX 60000 NX > /dev/null
        done
    done
    run_cron_daemon "$CRON_TMP/cron.d" "$CRON_TMP/out"
    [ "$n" -ge 2 ]
    for n in $(seq 0 "$n"); do
        # Run as the line's user (who wrote the status), exit 0 and not a word (-E 0 -q).
        [ "$(stat -c %U "$CRON_TMP/out/$n.status")" = "$(cat "$CRON_TMP/out/$n.user")" ]
        run cat "$CRON_TMP/out/$n.status" "$CRON_TMP/out/$n.out"
        assert_output '0'
    done
}

@test "the README's crontab lines work under cron after the README's install, which uninstalls" {
    need_cron_daemon
    need_build_tree
    if [ -e /usr/local/bin/redlock-run ] || [ -e /usr/local/share/doc/redlock-run ]; then
        skip "redlock-run is installed in /usr/local on this machine; not touching it"
    fi
    grep -qx 'cmake --install build --strip *#.*' "$SRC_DIR/README.md"
    redis_start
    local before="$BATS_TEST_TMPDIR/before"
    find /usr/local | sort > "$before"
    touch "$BATS_TEST_TMPDIR/local-installed"
    run cmake --install "$BUILD_DIR" --strip
    assert_success
    # Stripped: no symbol table.
    run nm /usr/local/bin/redlock-run
    assert_output --partial 'no symbols'
    CRON_TMP=$(mktemp -d /tmp/redlock-run-cron.XXXXXX)
    chmod 0755 "$CRON_TMP"
    # Each ```cron block of the README as a crontab of root's; cron's own PATH (/usr/bin:/bin),
    # this test's Redis, and neither a password nor TLS (another test covers those).
    local block=0 n word
    awk -v dir="$CRON_TMP" '/^```cron/ { f = 1; n++; next } /^```/ { f = 0 } f { print > (dir "/block" n) }' \
        "$SRC_DIR/README.md"
    [ -e "$CRON_TMP/block3" ]
    for src in "$CRON_TMP"/block*; do
        block=$((block + 1))
        mkdir -m 1777 "$CRON_TMP/out$block"
        ! grep -q '^PATH=' "$src"
        { echo "REDLOCK_URL=$REDIS_URL"; grep -vE '^REDLOCK_(URL|PASSWORD_FILE|TLS_[A-Z]+)=' "$src"; } |
            cron_jobs /dev/stdin "$CRON_TMP/out$block" root > "$CRON_TMP/cron$block"
        for n in "$CRON_TMP/out$block"/*.command; do
            local prev=
            # Each word, and each pair for "--prefix P NAME" (key P + NAME).
            for word in $(cat "$n"); do
                cli "$REDIS_PORT" SET "$word" someone-else PX 60000 NX > /dev/null
                cli "$REDIS_PORT" SET "$prev$word" someone-else PX 60000 NX > /dev/null
                prev=$word
            done
        done
        run_cron_daemon "$CRON_TMP/cron$block" "$CRON_TMP/out$block"
        for n in "$CRON_TMP/out$block"/*.status; do
            run cat "$n" "${n%.status}.out"
            assert_output '0'
        done
    done
    # The README's uninstall leaves /usr/local as it found it.
    local uninstall
    uninstall=$(sed -n 's/^\(xargs rm.*install_manifest.txt.*\)$/\1/p' "$SRC_DIR/README.md")
    [ -n "$uninstall" ]
    (cd "$(dirname "$BUILD_DIR")" && eval "${uninstall//build\//$(basename "$BUILD_DIR")/}")
    rm -f "$BATS_TEST_TMPDIR/local-installed"
    run diff "$before" <(find /usr/local | sort)
    assert_success
}

@test "the completion scripts parse in bash, zsh and fish" {
    need_build_tree
    run bash -n "$COMPLETIONS/redlock-run"
    assert_success
    if command -v zsh > /dev/null; then
        run zsh -n "$COMPLETIONS/_redlock-run"
        assert_success
    fi
    if command -v fish > /dev/null; then
        run fish -n "$COMPLETIONS/redlock-run.fish"
        assert_success
    fi
}

@test "the completions know exactly the options --help-all lists" {
    need_build_tree
    run diff <(help_options) <(table_options)
    assert_success
}

@test "bash completes options, subcommands, option values and the command after NAME" {
    need_build_tree
    [ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion missing"
    run bash_complete 'redlock-run --t'
    assert_output '--ttl'
    run bash_complete 'redlock-run '
    assert_output "$(printf '%s\n' history list release run status)"
    run bash_complete 'redlock-run -u redis://h:1 st'
    assert_output 'status'
    run bash_complete 'redlock-run --on-lost '
    assert_output "$(printf '%s\n' ignore kill term)"
    run bash_complete 'redlock-run --on-lost=ki'
    assert_output 'kill'
    run bash_complete 'redlock-run -qt 5s -w '
    assert_output 'forever'
    # An option's value is not taken for NAME: after "-t 5s job" comes the command.
    run bash_complete 'redlock-run -t 5s job ech'
    assert_line 'echo'
    run bash_complete 'redlock-run job -- ech'
    assert_line 'echo'
    run bash_complete 'redlock-run job -'
    assert_output "$(printf '%s\n' -- --shell -c)"
    # The operator commands take their own options and not the run options.
    run bash_complete 'redlock-run status --'
    assert_line '--json'
    assert_line '--url'
    refute_line '--ttl'
    refute_line '--token'
    run bash_complete 'redlock-run release --'
    assert_line '--token'
    assert_line '--force'
    refute_line '--json'
    run bash_complete 'redlock-run --'
    assert_line '--hold-info'
    refute_line '--json'
    run bash_complete "redlock-run --password-file $BATS_TEST_DIRNAME/packaging_help"
    assert_output "$BATS_TEST_DIRNAME/packaging_helpers.bash"
}

@test "fish completes options, subcommands, option values and the command after NAME" {
    need_build_tree
    command -v fish > /dev/null || skip "fish missing"
    run fish_complete 'redlock-run --t'
    assert_output '--ttl'
    run fish_complete 'redlock-run '
    assert_output "$(printf '%s\n' history list release run status)"
    run fish_complete 'redlock-run --on-lost '
    assert_output "$(printf '%s\n' ignore kill term)"
    run fish_complete 'redlock-run -t 5s job ech'
    assert_line 'echo'
    run fish_complete 'redlock-run -u x job ls --al'
    assert_line '--all'
    run fish_complete 'redlock-run release --'
    assert_line '--token'
    refute_line '--ttl'
}

@test "zsh's completion function offers options, subcommands, values and the command" {
    need_build_tree
    command -v zsh > /dev/null || skip "zsh missing"
    run zsh_complete 'redlock-run --t'
    assert_line 'options --ttl'
    refute_line 'options --json'
    run zsh_complete 'redlock-run '
    assert_line 'commands status'
    run zsh_complete 'redlock-run --on-lost '
    assert_output "$(printf '%s\n' 'value ignore' 'value kill' 'value term')"
    run zsh_complete 'redlock-run --password-file '
    assert_output 'files'
    run zsh_complete 'redlock-run -qt '
    assert_output --partial 'message duration'
    run zsh_complete 'redlock-run -t 5s job -- ls -'
    assert_output 'command ls -'
    run zsh_complete 'redlock-run status --'
    assert_line 'options --json'
    refute_line 'options --ttl'
}
