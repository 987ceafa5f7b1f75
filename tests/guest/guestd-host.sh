# Sourced by tests/guest/guestd.sh (its helpers and $T): the host
# channel: keys, TLS, idle connections, bad input from the host, the
# virtio-serial port.

# The host channel over TCP takes the shared key: a client without it is
# refused (a command before the handshake, silence past the handshake
# timeout, a wrong proof), a keyed one works; a tcp: channel without
# host_key does not start.
case_host_auth() {
    local port key=$T/host.key
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    head -c 32 /dev/urandom >"$key"
    echo "host = tcp:127.0.0.1:$port" >"$T/tcp.conf"
    "$GUESTD" --config "$T/tcp.conf" --control none --listen "$T/x.sock" \
        --state "$T/x.state" 2>&1 | tee "$T/err"
    grep -q 'needs host_key' "$T/err" || die "a tcp: channel without a key started"
    # The channel's own handshake, without TLS under it (host-tls tests
    # that layer): raw clients below speak it with Python's HMAC.
    start_daemon "host = tcp:127.0.0.1:$port" "host_key = $key" \
        "host_handshake_ms = 1000" "tls = none"
    local tcp="--connect tcp:127.0.0.1:$port --tls none"
    until_ 5 grep -q 'listening on tcp:.*authenticated' "$T/guestd.log"
    # Without the key: refused, nothing done.
    out=$("$CTL" $tcp --timeout 20 prepare --offline) &&
        die "an unauthenticated prepare succeeded"
    echo "$out"
    echo "$out" | grep -q 'authenticate first' || die "no refusal reason"
    ! grep -q 'modprobe -r' "$T/mods/log" 2>/dev/null ||
        die "the module was unloaded"
    ctl status | grep -q '^phase: idle' || die "phase is not idle"
    # A wrong key: the client sees the daemon does not hold it.
    head -c 32 /dev/urandom >"$T/wrong.key"
    "$CTL" $tcp --key "$T/wrong.key" --timeout 20 status 2>&1 |
        tee "$T/err"
    grep -q 'does not hold our key' "$T/err" || die "a wrong key was not noticed"
    # Raw clients, with Python's own HMAC: silence; the daemon's proof
    # checked; a wrong proof refused; the right one accepted.
    python3 - "$port" "$key" <<'EOF' || die "raw clients: handshake wrong"
import hashlib, hmac, os, socket, struct, sys
port, key = int(sys.argv[1]), open(sys.argv[2], "rb").read()
def frame(b): return struct.pack(">I", len(b)) + b
def read_frame(s):
    hdr = b""
    while len(hdr) < 4:
        c = s.recv(4 - len(hdr))
        if not c: return None
        hdr += c
    n = struct.unpack(">I", hdr)[0]; body = b""
    while len(body) < n:
        c = s.recv(n - len(body))
        if not c: return None
        body += c
    return body
def fields(b):  # protobuf: {field number: value} (varints and bytes)
    out, i = {}, 0
    def varint():
        nonlocal i
        v = sh = 0
        while True:
            c = b[i]; i += 1; v |= (c & 0x7f) << sh; sh += 7
            if c < 0x80: return v
    while i < len(b):
        tag = varint()
        if tag & 7 == 0: out[tag >> 3] = varint()
        else:
            n = varint(); out[tag >> 3] = b[i:i + n]; i += n
    return out
def conn():
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(20)
    return s
def hello(s):
    nonce = os.urandom(32)
    h = b"\x08\x01\x12\x20" + nonce               # Hello{version 1, nonce}
    s.sendall(frame(b"\x08\x01\x72" + bytes([len(h)]) + h))
    ch = fields(fields(read_frame(s))[11])       # GuestMessage.challenge
    want = hmac.new(key, b"crane-guestd server" + nonce, hashlib.sha256)
    assert ch[2] == want.digest(), "the daemon's proof is wrong"
    return ch[1]
def auth(s, mac):
    a = b"\x0a\x20" + mac                         # Auth{mac}
    s.sendall(frame(b"\x08\x02\x7a" + bytes([len(a)]) + a))
    return read_frame(s)
s = conn()
assert s.recv(1) == b"", "silent client got data"
print("silent client: closed after the handshake timeout")
s = conn(); hello(s)
body = auth(s, b"\x00" * 32)
assert body and b"wrong key" in body, "wrong proof not refused: %r" % body
assert read_frame(s) is None, "connection left open after a wrong proof"
print("wrong proof: refused and closed")
s = conn(); theirs = hello(s)
mac = hmac.new(key, b"crane-guestd client" + theirs, hashlib.sha256).digest()
ack = fields(fields(auth(s, mac))[10])
assert ack.get(2, 0) == 0 and b"authenticated" in ack[3], ack
s.sendall(frame(b"\x08\x09\x52\x00"))            # status, id 9
assert fields(read_frame(s))[1] == 9, "no status answer"
print("right proof: authenticated, status answered")
EOF
    grep -q 'no authentication within host_handshake_ms' "$T/guestd.log" ||
        die "no handshake timeout logged"
    # crane-hostd's own client (host-daemon/guest.c): refused without
    # guest_key, answered with it.
    "$B/tests/guest/hostd_guest_call" "tcp:127.0.0.1:$port" &&
        die "crane-hostd's client got in without the key"
    "$B/tests/guest/hostd_guest_call" "tcp:127.0.0.1:$port" "$T/wrong.key" \
        none && die "crane-hostd's client got in with a wrong key"
    "$B/tests/guest/hostd_guest_call" "tcp:127.0.0.1:$port" "$key" none ||
        die "crane-hostd's client with the key was not answered"
    # With the key: commands work.
    "$CTL" $tcp --key "$key" --timeout 20 status | tee "$T/st.out"
    grep -q '^phase: idle' "$T/st.out" || die "keyed status failed"
    CRANECTL_KEY=$key "$CTL" $tcp --timeout 60 prepare --offline ||
        die "keyed prepare failed"
    grep -q 'modprobe -r fakegpu' "$T/mods/log" || die "module not unloaded"
    CRANECTL_KEY=$key "$CTL" $tcp --timeout 60 resume || die "keyed resume failed"
}

# A host connection with nothing asked is closed after host_idle_ms; one
# waiting for a long prepare is not, and gets its answer.
# TLS under the host channel (proto/tls.c): psk from host_key by default
# (auto), x509 with a PKI in libvirt's layout; cranectl and crane-hostd's
# client (host-daemon/guest.c) get in with the right credentials; a wrong
# key, a certificate from another CA and a client without TLS are refused,
# each with the daemon's log saying so.
case_host_tls() {
    local port key=$T/host.key n
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    head -c 32 /dev/urandom >"$key"
    head -c 32 /dev/urandom >"$T/wrong.key"
    local tcp="--connect tcp:127.0.0.1:$port"
    refusals() { grep -c 'tcp connection from 127.0.0.1 refused: .*TLS' \
        "$T/guestd.log"; }
    # The daemon logs a refusal once its handshake thread is back on the
    # loop, maybe after the client has exited: wait for it (tests/wait.sh).
    more_refusals() { [ "$(refusals)" -gt "$1" ]; }
    refused_since() { until_ 5 more_refusals "$1"; }
    wait_listening() {
        until_ 5 grep -q "listening on tcp:.*TLS $1" "$T/guestd.log" &&
            return 0
        die "no 'TLS $1' listener"
    }
    start_daemon "host = tcp:127.0.0.1:$port" "host_key = $key" \
        "pki_dir = $T/no-pki"
    wait_listening psk
    "$CTL" $tcp --key "$key" --timeout 20 status | tee "$T/st.out"
    grep -q '^phase: idle' "$T/st.out" || die "psk status failed"
    "$B/tests/guest/hostd_guest_call" "tcp:127.0.0.1:$port" "$key" psk ||
        die "crane-hostd's client over psk was not answered"
    n=$(refusals)
    "$CTL" $tcp --key "$T/wrong.key" --timeout 20 status 2>&1 &&
        die "a wrong key got in"
    refused_since "$n" || die "no refusal logged for a wrong key"
    n=$(refusals)
    "$CTL" $tcp --key "$key" --tls none --timeout 20 status 2>&1 &&
        die "a client without TLS got in"
    refused_since "$n" || die "no refusal logged for a plain client"
    grep 'refused: .*TLS' "$T/guestd.log"
    kill "$GD_PID"
    wait "$GD_PID" 2>/dev/null
    rm -f "$T/guestd.conf"
    tests/tls/mkpki.sh "$T/pki" guest >/dev/null || die "mkpki"
    tests/tls/mkpki.sh "$T/other" stranger >/dev/null || die "mkpki"
    cp "$T/pki/CA/cacert.pem" "$T/other/CA/cacert.pem"
    start_daemon "host = tcp:127.0.0.1:$port" "host_key = $key" \
        "tls = x509" "pki_dir = $T/pki"
    wait_listening x509
    "$CTL" $tcp --key "$key" --tls x509 --pki-dir "$T/pki" --timeout 20 \
        status | tee "$T/st.out"
    grep -q '^phase: idle' "$T/st.out" || die "x509 status failed"
    "$B/tests/guest/hostd_guest_call" "tcp:127.0.0.1:$port" "$key" x509 \
        "$T/pki" || die "crane-hostd's client over x509 was not answered"
    n=$(refusals)
    "$CTL" $tcp --key "$key" --tls x509 --pki-dir "$T/other" --timeout 20 \
        status 2>&1 && die "a certificate from another CA got in"
    refused_since "$n" || die "no refusal logged for another CA"
}

case_host_idle() {
    start_daemon "host_idle_ms = 700"
    fake slow ok 2000
    wait_programs 1
    python3 - "$T/host.sock" <<'EOF' || die "host idle timeout"
import socket, struct, sys, time
def conn():
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(30)
    return s
idle = conn()
busy = conn()
# prepare{mode=offline, deadline_ms=10000}, id 7
body = b"\x08\x07\x5a\x05\x08\x02\x18\x90\x4e"
busy.sendall(struct.pack(">I", len(body)) + body)
assert idle.recv(1) == b"", "idle connection got data"
print("idle host connection closed")
hdr = b""
while len(hdr) < 4:
    c = busy.recv(4 - len(hdr))
    assert c, "the waiting connection was closed"
    hdr += c
n = struct.unpack(">I", hdr)[0]; ans = b""
while len(ans) < n:
    ans += busy.recv(n - len(ans))
assert ans.startswith(b"\x08\x07"), ans[:20]
print("waiting connection answered after the slow prepare")
EOF
    grep -q 'idle for host_idle_ms' "$T/guestd.log" || die "no idle close logged"
    ctl status | grep -q '^phase: prepared' || die "prepare did not finish"
    expect_ok resume
}

# Malformed and unexpected host messages: each rejected with a reason, the
# daemon serves on.
case_bad_host_input() {
    start_daemon
    worker 1
    wait_programs 1
    python3 - "$T/host.sock" <<'EOF' || die "bad host input not rejected"
import socket, struct, sys
def frame(b): return struct.pack(">I", len(b)) + b
def ack(s):
    hdr = b""
    while len(hdr) < 4:
        c = s.recv(4 - len(hdr))
        if not c: return None
        hdr += c
    n = struct.unpack(">I", hdr)[0]
    body = b""
    while len(body) < n:
        body += s.recv(n - len(body))
    return body
def conn():
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
    return s
s = conn()
cases = [
    ("garbage", b"\xff\xff\xff\xff\xff", b"undecodable"),
    ("empty (no command)", b"", b"unknown or missing command"),
    ("unknown field only", b"\xf8\x07\x01", b"unknown or missing command"),
    # prepare{mode=7}
    ("bad mode", b"\x08\x05\x5a\x02\x08\x07", b"unknown migration mode"),
    # prepare{mode=live, proxy="nonsense"}
    ("bad proxy", b"\x08\x06\x5a\x0c\x08\x01\x12\x08nonsense", b"bad proxy"),
    # prepare{deadline_ms=99999999}
    ("huge deadline", b"\x08\x07\x5a\x05\x18\xff\xc1\xd7\x2f", b"over one hour"),
]
for name, body, want in cases:
    s.sendall(frame(body))
    r = ack(s)
    print(name, "->", r)
    if r is None or want not in r:
        sys.exit("%s: expected %r" % (name, want))
# A frame over 64 KiB: an error, then the connection is closed.
s.sendall(struct.pack(">I", 1 << 20) + b"x" * 100)
r = ack(s)
print("oversize ->", r)
if r is not None and ack(s) is not None:
    sys.exit("oversize: connection still open")
# Half a frame, then hang up.
s = conn(); s.sendall(b"\x00\x00\x00\x10\x08"); s.close()
EOF
    kill -0 "$GD_PID" || die "crane-guestd died"
    expect_ok status
    # Unexpected order: resume while a prepare is in progress; abort then.
    fake mute silent
    wait_programs 2
    ctl prepare --deadline 60000 >/dev/null 2>&1 &
    until_ 10 grep -q '^phase preparing' "$T/guestd.state"
    expect_fail 'a prepare is in progress' resume
    expect_fail 'a prepare is in progress' prepare
    ctl abort --deadline 1000
    kill -0 "$GD_PID" || die "crane-guestd died"
    finish_workers 1
}

# The host channel as a character device (a pty stands in for the
# virtio-serial port): commands work; the host hanging up is normal and
# costs no CPU.
case_port() {
    python3 - "$T" "$GUESTD" "$PWD" <<'EOF' || die "port test failed"
import os, pty, struct, subprocess, sys, time, tty
t, guestd, cwd = sys.argv[1:4]
master, slave = pty.openpty()
tty.setraw(master)
name = os.ttyname(slave)
os.makedirs(t + "/mods/dev", exist_ok=True)
log = open(t + "/guestd.log", "a")
d = subprocess.Popen([guestd, "--listen", t + "/guest.sock", "--host", name,
                      "--control", "unix:" + t + "/ctl.sock",
                      "--state", t + "/guestd.state", "--log-level", "debug"],
                     stdout=log, stderr=log)
os.close(slave)
try:
    time.sleep(0.5)
    def ask(body):
        os.write(master, struct.pack(">I", len(body)) + body)
        hdr = b""
        deadline = time.time() + 10
        while len(hdr) < 4 and time.time() < deadline:
            hdr += os.read(master, 4 - len(hdr))
        n = struct.unpack(">I", hdr)[0]
        out = b""
        while len(out) < n:
            out += os.read(master, n - len(out))
        return out
    r = ask(b"\x08\x2a\x52\x00")          # status, id 42
    print("status over the port ->", r[:60])
    assert r.startswith(b"\x08\x2a"), "reply does not carry id 42"
    r = ask(b"\xff\xff")
    assert b"undecodable" in r, r
    os.close(master)                        # the host hangs up
    time.sleep(2)
    with open("/proc/%d/stat" % d.pid) as f:
        fields = f.read().split(")")[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    print("daemon CPU time after the hang-up: %.2f s" % cpu)
    assert cpu < 0.5, "daemon spins while the host is away"
    out = subprocess.run([cwd + "/build/bin/cranectl", "--connect",
                          "unix:" + t + "/ctl.sock", "status"],
                         capture_output=True, text=True)
    print(out.stdout)
    assert out.returncode == 0 and "phase: idle" in out.stdout
finally:
    d.terminate()
    d.wait()
EOF
    grep -q 'host side disconnected' "$T/guestd.log" ||
        die "hang-up not noticed"
}
