# TLS for the end-to-end tests: a throwaway CA with server and client certificates made by
# openssl at test time, a redis-server with a TLS port beside its plain one (the tests inspect
# keys through the plain port), and small TLS and plain listeners that misbehave on purpose.
# Load after helpers.bash.
# shellcheck shell=bash

# tls_make_pki DIR: writes into DIR
#   ca.crt ca.key                the test CA
#   server.crt server.key        for DNS:localhost and IP:127.0.0.1, signed by the CA
#   wrong-host.crt .key          for DNS:other.example only, signed by the CA
#   client.crt client.key        a client certificate signed by the CA
#   other-ca.crt, rogue.crt .key another CA, and a client certificate it signed
# EC P-256 keys: as good as RSA for these tests and generated in milliseconds.
tls_make_pki() {
    local dir=$1
    mkdir -p "$dir"
    (
        set -e
        cd "$dir"
        local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
        local ca_ext=(-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign)
        openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -subj /CN=redlock-test-ca -days 2 "${ca_ext[@]}"
        openssl req -x509 "${ec[@]}" -keyout other-ca.key -out other-ca.crt -subj /CN=other-ca -days 2 "${ca_ext[@]}"
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
        printf 'subjectAltName=DNS:other.example\nextendedKeyUsage=serverAuth\n' > wrong-host.ext
        printf 'extendedKeyUsage=clientAuth\n' > client.ext
        cp client.ext rogue.ext
        tls_sign server ca localhost
        tls_sign wrong-host ca other.example
        tls_sign client ca redlock-client
        tls_sign rogue other-ca rogue-client
    ) >"$dir/openssl.log" 2>&1 || { cat "$dir/openssl.log" >&2; return 1; }
}

# tls_sign NAME CA CN: a key NAME.key and a certificate NAME.crt for CN with the extensions in
# NAME.ext, signed by CA.crt / CA.key (in the current directory).
tls_sign() {
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" \
        -out "$1.csr" -subj "/CN=$3"
    openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 2 \
        -extfile "$1.ext" -out "$1.crt"
}

# tls_redis_start [CERT [AUTH-CLIENTS [REDIS-ARGS...]]]: redis_start with a TLS port TLS_PORT as
# well, serving CERT (default server) and requiring client certificates when AUTH-CLIENTS is
# yes (default no). Sets TLS_PORT; REDIS_PORT stays the plain port for `cli "$REDIS_PORT"`.
tls_redis_start() {
    local cert=${1:-server} auth=${2:-no}
    shift 2 || shift $#
    redis_start --tls-port @PORT2@ --tls-cert-file "$PKI/$cert.crt" \
        --tls-key-file "$PKI/$cert.key" --tls-ca-cert-file "$PKI/ca.crt" \
        --tls-auth-clients "$auth" "$@" || return 1
    export TLS_PORT=$LAUNCH_PORT2
    wait_for 5 tls_ping
}

# True when the TLS port answers PING (redis-cli, with our client certificate in case).
tls_ping() {
    [ "$(redis-cli --tls --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" \
        -h 127.0.0.1 -p "$TLS_PORT" ${CLI_OPTS:-} PING 2>/dev/null)" = PONG ]
}

# listener_start MODE: a loopback server on a free port, for peers redis-server cannot play:
#   silent  accepts connections and never sends a byte (a handshake that never completes)
#   sni     a TLS server with the server certificate that appends each client's SNI name (or
#           "none") to $BATS_TEST_TMPDIR/sni, then closes the connection
# Sets LISTENER_PORT and LISTENER_PID.
listener_start() {
    local portfile="$BATS_TEST_TMPDIR/listener.port"
    rm -f "$portfile"
    /usr/bin/python3 - "$1" "$portfile" "$PKI" "$BATS_TEST_TMPDIR/sni" <<'EOF' 3>&- &
import socket, ssl, sys, time
mode, portfile, pki, sni_file = sys.argv[1:5]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(16)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
import os
os.rename(portfile + ".tmp", portfile)
held = []
ctx = None
if mode == "sni":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki + "/server.crt", pki + "/server.key")
    def note(sock, name, context):
        with open(sni_file, "a") as f:
            f.write((name or "none") + "\n")
    ctx.sni_callback = note
while True:
    conn, _ = srv.accept()
    if mode == "silent":
        held.append(conn)
        continue
    try:
        tls = ctx.wrap_socket(conn, server_side=True)
        tls.close()
    except (ssl.SSLError, OSError):
        conn.close()
EOF
    LISTENER_PID=$!
    wait_for 5 file_exists "$portfile" || return 1
    LISTENER_PORT=$(cat "$portfile")
}

listener_stop() {
    if [ -n "${LISTENER_PID:-}" ]; then
        kill "$LISTENER_PID" 2>/dev/null || true
        wait "$LISTENER_PID" 2>/dev/null || true
        LISTENER_PID=
    fi
}
