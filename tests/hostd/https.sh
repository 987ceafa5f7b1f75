#!/bin/bash
# The HTTP server's web config (the Prometheus exporter-toolkit's format):
# HTTPS with a required client certificate (curl --cert works, without one
# or with one of another CA refused, plain HTTP on the TLS port gets
# nothing), a bearer token and basic auth users (right: 200, wrong or
# none: 401 with WWW-Authenticate), plain HTTP refused on 0.0.0.0 (HTTPS
# there allowed), web configs crane cannot trust refused at start.
#
#   https.sh     exit 0 pass, 1 fail, 77 skip
set -u
cd "$(dirname "$0")/../.."
. tests/wait.sh

B=${B:-build}
SERVE=${SERVE:-$B/tests/hostd-serve}
[ -x "$SERVE" ] || { echo "skip: $SERVE not built"; exit 77; }
for c in curl openssl perl; do
    command -v $c > /dev/null || { echo "skip: $c missing"; exit 77; }
done

T=$(mktemp -d /tmp/crane-https-test.XXXXXX)
SPID=
stop_server() {
    if [ -n "$SPID" ]; then
        exec 3>&-
        wait "$SPID" 2>/dev/null
        SPID=
    fi
}
cleanup() {
    stop_server
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
die() {
    echo "FAIL: $*"
    for f in serve.out serve.err curl.out curl.err; do
        [ -s "$T/$f" ] && { echo "--- $f"; tail -n 20 "$T/$f"; }
    done
    exit 1
}

# --- a PKI: a CA, a server and a client certificate, a client of another CA
pki() {
    local d=$T/pki
    mkdir -p "$d"
    for ca in ca other; do
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$ca" \
            -keyout "$d/$ca.key" -out "$d/$ca.pem" 2>/dev/null || return 1
    done
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$d/san.ext"
    # name CA: a certificate for NAME signed by CA
    sign() {
        openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" \
            -keyout "$d/$1.key" -out "$d/$1.csr" 2>/dev/null &&
        openssl x509 -req -in "$d/$1.csr" -CA "$d/$2.pem" -CAkey "$d/$2.key" \
            -CAcreateserial -days 2 -extfile "$d/san.ext" \
            -out "$d/$1.pem" 2>/dev/null
    }
    sign server ca && sign client ca && sign stranger other
}
pki || { echo "skip: openssl could not make the test PKI"; exit 77; }
P=$T/pki

"$SERVE" --fixture "$T/h.db" > /dev/null || die "cannot write the fixture"

# serve ADDR [WEB_CONFIG]: hostd-serve in the background until stop_server;
# PORT set from its first line.
serve() {
    stop_server
    rm -f "$T/in" "$T/serve.out"
    mkfifo "$T/in"
    "$SERVE" "$T/h.db" 0 "$1" "${2:-}" < "$T/in" > "$T/serve.out" \
        2> "$T/serve.err" &
    SPID=$!
    exec 3> "$T/in"
    wait_until -q 20 -e "$SPID" -n "hostd-serve's port" -- \
        grep -q '^port ' "$T/serve.out" || die "hostd-serve did not start"
    PORT=$(sed -n 's/^port //p' "$T/serve.out")
}
# get WANT URL CURL_ARGS...: the HTTP status curl saw must be WANT (000:
# no HTTP answer at all).
get() {
    local want=$1 url=$2 code
    shift 2
    code=$(curl -s -o "$T/curl.out" -D "$T/curl.hdr" -w '%{http_code}' \
        --max-time 20 "$@" "$url" 2> "$T/curl.err")
    [ "$code" = "$want" ] || die "GET $url $*: status $code, expected $want"
}

# --- HTTPS with a required client certificate -------------------------------
cat > "$T/tls.yml" <<EOF
# exporter-toolkit's format
tls_server_config:
  cert_file: $P/server.pem
  key_file: "$P/server.key"
  client_ca_file: $P/ca.pem
  client_auth_type: RequireAndVerifyClientCert
EOF
serve 127.0.0.1 "$T/tls.yml"
grep -q '(HTTPS)' "$T/serve.err" || die "the server does not say HTTPS"
U=https://127.0.0.1:$PORT
get 200 "$U/metrics" --cacert "$P/ca.pem" --cert "$P/client.pem" \
    --key "$P/client.key"
grep -q '^crane_build_info' "$T/curl.out" || die "no metrics over HTTPS"
get 200 "$U/api/migrations" --cacert "$P/ca.pem" --cert "$P/client.pem" \
    --key "$P/client.key"
grep -q '"migrations"' "$T/curl.out" || die "no API over HTTPS"
get 403 "$U/metrics" --cacert "$P/ca.pem"
grep -q 'client certificate is required' "$T/curl.out" ||
    die "no reason for the refusal"
grep -q crane_build_info "$T/curl.out" && die "metrics without a certificate"
code=$(curl -s -o "$T/curl.out" -w '%{http_code}' --max-time 20 \
    --cacert "$P/ca.pem" --cert "$P/stranger.pem" --key "$P/stranger.key" \
    "$U/metrics" 2> "$T/curl.err")
[ "$code" = 403 ] || [ "$code" = 000 ] ||
    die "a certificate of another CA: status $code"
grep -q crane_build_info "$T/curl.out" && die "metrics for another CA's client"
get 000 "http://127.0.0.1:$PORT/metrics"

# --- a bearer token and basic auth users, plain on loopback --------------------
echo "s3cret-token-0123456789" > "$T/token"
HASH=$(perl -e 'print crypt("pw-good", "\$2b\$05\$abcdefghijklmnopqrstuu")')
case $HASH in \$2b\$05\$*) ;; *) die "libcrypt has no bcrypt: $HASH" ;; esac
cat > "$T/auth.yml" <<EOF
basic_auth_users:
  prometheus: '$HASH'
bearer_token_file: $T/token
EOF
serve 127.0.0.1 "$T/auth.yml"
grep -q 'credentials required' "$T/serve.err" || die "no credentials said"
U=http://127.0.0.1:$PORT
get 200 "$U/metrics" -H "Authorization: Bearer s3cret-token-0123456789"
grep -q '^crane_build_info' "$T/curl.out" || die "no metrics with the token"
get 401 "$U/metrics" -H "Authorization: Bearer s3cret-token-012345678"
grep -qi '^WWW-Authenticate: Basic realm="crane"' "$T/curl.hdr" ||
    die "a 401 without WWW-Authenticate"
grep -q crane_build_info "$T/curl.out" && die "metrics for a wrong token"
get 401 "$U/metrics"
get 401 "$U/" -H "Authorization: Bearer "
get 200 "$U/api/pool" -u prometheus:pw-good
get 401 "$U/api/pool" -u prometheus:pw-bad
get 401 "$U/api/pool" -u someone:pw-good

# --- plain HTTP only on loopback ------------------------------------------------
stop_server
"$SERVE" "$T/h.db" 0 0.0.0.0 < /dev/null > "$T/serve.out" 2> "$T/serve.err"
[ $? = 1 ] || die "plain HTTP on 0.0.0.0 was not refused"
grep -q 'refusing to serve plain HTTP on 0.0.0.0' "$T/serve.err" ||
    die "no clear message for plain HTTP on 0.0.0.0"
"$SERVE" "$T/h.db" 0 0.0.0.0 "$T/auth.yml" < /dev/null > "$T/serve.out" \
    2> "$T/serve.err"
[ $? = 1 ] || die "a token over plain HTTP on 0.0.0.0 was not refused"
serve 0.0.0.0 "$T/tls.yml"
get 200 "https://127.0.0.1:$PORT/metrics" --cacert "$P/ca.pem" \
    --cert "$P/client.pem" --key "$P/client.key"
stop_server

# --- crane-hostd: --http on 0.0.0.0 plain refused, with --web-config served --
HOSTD=${HOSTD:-$B/bin/crane-hostd}
if [ -x "$HOSTD" ]; then
    hostd() {
        "$HOSTD" --uri test:///default --control "unix:$T/${CSOCK:-c}.sock" \
            --peer-listen none --history "$T/hd.db" --host-name host-a \
            --peer-key none "$@"
    }
    hostd --http 0.0.0.0:0 > "$T/serve.err" 2>&1 < /dev/null
    [ $? = 1 ] || die "crane-hostd served plain HTTP on 0.0.0.0"
    grep -q 'refusing to serve plain HTTP on 0.0.0.0' "$T/serve.err" ||
        die "crane-hostd: no clear message for plain HTTP on 0.0.0.0"
    printf 'tls_server_config:\n  cert_file: %s\n' "$P/server.pem" \
        > "$T/half.yml"
    hostd --http 127.0.0.1:0 --web-config "$T/half.yml" \
        > "$T/serve.err" 2>&1 < /dev/null
    [ $? = 1 ] || die "crane-hostd started with a broken web config"
    grep -q 'web_config: .*needs cert_file and key_file' "$T/serve.err" ||
        die "crane-hostd: no reason for the broken web config"
    hostd --http 0.0.0.0:0 --web-config "$T/tls.yml" > "$T/serve.err" 2>&1 &
    HPID=$!
    wait_until -q 20 -e "$HPID" -n "crane-hostd's HTTPS" -- \
        grep -q 'http: serving on 0.0.0.0 port [0-9]* (HTTPS)' "$T/serve.err"
    HPORT=$(sed -n 's/.*http: serving on 0.0.0.0 port \([0-9]*\).*/\1/p' \
        "$T/serve.err")
    [ -n "$HPORT" ] || { kill $HPID; die "crane-hostd did not serve HTTPS"; }
    get 200 "https://127.0.0.1:$HPORT/metrics" --cacert "$P/ca.pem" \
        --cert "$P/client.pem" --key "$P/client.key"
    ok=$(grep -c '^crane_build_info' "$T/curl.out")
    get 403 "https://127.0.0.1:$HPORT/metrics" --cacert "$P/ca.pem"
    kill $HPID
    wait $HPID
    [ "$ok" = 1 ] || die "crane-hostd's metrics over HTTPS"

    # The gauges: the hypervisor answers; the proxy (a port nothing
    # listens on) does not, found by the daemon's own bounded probe.
    printf 'proxy = tcp:127.0.0.1:9\nproxy_timeout_ms = 500\nproxy_key = none\ntls = none\n' > "$T/hd.conf"
    CSOCK=c2 hostd --config "$T/hd.conf" --http 127.0.0.1:0 > "$T/serve.err" 2>&1 &
    HPID=$!
    wait_until -q 20 -e "$HPID" -n "crane-hostd's HTTP" -- \
        grep -q 'http: serving on 127.0.0.1 port [0-9]*' "$T/serve.err"
    HPORT=$(sed -n 's/.*http: serving on 127.0.0.1 port \([0-9]*\).*/\1/p' \
        "$T/serve.err")
    proxy_seen() {
        curl -s --max-time 10 "http://127.0.0.1:$HPORT/metrics" \
            > "$T/curl.out" && grep -q '^crane_proxy_up ' "$T/curl.out"
    }
    wait_until -q 30 -e "$HPID" -n "the proxy's gauge" -- proxy_seen
    kill $HPID
    wait $HPID
    grep -qx 'crane_proxy_up 0' "$T/curl.out" || die "crane_proxy_up"
    grep -qx 'crane_hypervisor_connected 1' "$T/curl.out" ||
        die "crane_hypervisor_connected"
    grep -q '^# TYPE crane_peer_up' "$T/curl.out" &&
        die "crane_peer_up without a peer"
else
    echo "note: $HOSTD not built: crane-hostd's part not run"
fi

# --- web configs that must not start ------------------------------------------
bad() {
    printf '%s\n' "$2" > "$T/bad.yml"
    "$SERVE" "$T/h.db" 0 127.0.0.1 "$T/bad.yml" < /dev/null \
        > "$T/serve.out" 2> "$T/serve.err"
    [ $? = 1 ] || die "web config accepted: $1"
    grep -q "$3" "$T/serve.err" || die "$1: no message with '$3'"
}
bad "unknown key" "tls_server_config:
  cert_file: $P/server.pem
  key_file: $P/server.key
  min_versoin: TLS13" "unknown tls_server_config setting"
bad "cert without key" "tls_server_config:
  cert_file: $P/server.pem" "needs cert_file and key_file"
bad "client CA, no verification" "tls_server_config:
  cert_file: $P/server.pem
  key_file: $P/server.key
  client_ca_file: $P/ca.pem
  client_auth_type: NoClientCert" "client_ca_file with NoClientCert"
bad "missing file" "tls_server_config:
  cert_file: $T/none.pem
  key_file: $P/server.key" "cannot read"
echo short > "$T/short-token"
bad "short token" "bearer_token_file: $T/short-token" "16 to 255 bytes"
bad "unknown top-level key" "web: 1" "unknown setting"
echo "ok: HTTPS with client certificates, token, basic auth, loopback rule"
