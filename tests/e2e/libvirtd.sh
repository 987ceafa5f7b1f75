#!/bin/sh
# Starts and stops one libvirtd "host" in its own mount namespace for the e2e tests.
#
# Usage: tests/e2e/libvirtd.sh start|stop|uri NAME
#
# Each instance gets private /etc/libvirt, /run/libvirt, /var/lib/libvirt,
# /var/cache/libvirt and /var/log/libvirt (bind-mounted from
# $CRANE_E2E_DIR/NAME/, default /tmp/crane-e2e/NAME) inside `unshare -m`,
# and a host_uuid derived from NAME, so that two instances on one machine
# can migrate to each other. qemu.conf runs QEMU as root with no security
# driver, no cgroups and no per-domain namespaces (what works here without
# systemd; see ../shared/VM.md). `start` prints the URI to use, e.g.
#   qemu+unix:///system?socket=/tmp/crane-e2e/src/run/libvirt-sock
# CRANE_LIBVIRTD_QEMU_CONF holds more qemu.conf lines for an instance
# that `start` creates (one already running keeps its own).
# `stop` destroys the instance's domains, ends libvirtd, and kills any QEMU
# it left behind (all by the pids recorded in the state folder).
set -eu

usage() { echo "usage: $0 start|stop|uri NAME" >&2; exit 2; }
[ $# -eq 2 ] || usage
CMD=$1
NAME=$2
case $NAME in *[!A-Za-z0-9_-]*|'') echo "libvirtd.sh: bad NAME '$NAME'" >&2; exit 2 ;; esac
BASE=${CRANE_E2E_DIR:-/tmp/crane-e2e}/$NAME
SOCK=$BASE/run/libvirt-sock
URI="qemu+unix:///system?socket=$SOCK"
PIDFILE=$BASE/libvirtd.pid
START_TIMEOUT=${CRANE_LIBVIRTD_TIMEOUT:-60}
. "$(dirname "$0")/../wait.sh"

alive() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
answers() { [ -S "$SOCK" ] && virsh -q -c "$URI" version > /dev/null 2>&1; }

start() {
    if alive; then
        echo "$URI"
        return 0
    fi
    mkdir -p "$BASE/etc/qemu" "$BASE/run" "$BASE/lib" "$BASE/cache" "$BASE/log"
    # A stable UUID per NAME: distinct hosts for libvirt's migration checks.
    uuid=$(printf '%s' "crane-e2e-$NAME" | md5sum |
        sed 's/^\(.\{8\}\)\(.\{4\}\).\(.\{3\}\).\(.\{3\}\)\(.\{12\}\).*/\1-\2-4\3-8\4-\5/')
    cat > "$BASE/etc/libvirtd.conf" <<CONF
# crane e2e instance $NAME (tests/e2e/libvirtd.sh)
host_uuid = "$uuid"
unix_sock_group = "root"
unix_sock_rw_perms = "0700"
auth_unix_ro = "none"
auth_unix_rw = "none"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
CONF
    cat > "$BASE/etc/qemu.conf" <<CONF
# crane e2e instance $NAME: QEMU as plain root processes (no systemd here).
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
stdio_handler = "file"
cgroup_controllers = [ ]
namespaces = [ ]
CONF
    # More settings for this instance (the TLS cases' migrate_tls_*).
    [ -n "${CRANE_LIBVIRTD_QEMU_CONF:-}" ] &&
        printf '%s\n' "$CRANE_LIBVIRTD_QEMU_CONF" >> "$BASE/etc/qemu.conf"
    : > "$BASE/etc/libvirt.conf"
    : > "$BASE/log/libvirtd.log"
    setsid unshare -m --propagation private -- sh -c '
        set -e
        b=$1
        mount --bind "$b/etc" /etc/libvirt
        mkdir -p /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt
        mount --bind "$b/run" /run/libvirt
        mount --bind "$b/lib" /var/lib/libvirt
        mount --bind "$b/cache" /var/cache/libvirt
        mount --bind "$b/log" /var/log/libvirt
        exec libvirtd -f /etc/libvirt/libvirtd.conf -p /run/libvirt/libvirtd.pid
    ' sh "$BASE" > "$BASE/libvirtd.out" 2>&1 < /dev/null &
    echo $! > "$PIDFILE"
    # Wait until the daemon answers (the first connection probes QEMU's
    # capabilities and takes several seconds).
    # It fails once the daemon exited, or after START_TIMEOUT s in which
    # neither it (and the QEMU it probes) nor its log moved.
    _pid=$(cat "$PIDFILE")
    if ! wait_until -q "$START_TIMEOUT" -t "$_pid" -f "$BASE/log" -e "$_pid" \
        -n "libvirtd $NAME answers" -- answers; then
        if ! alive; then
            echo "libvirtd.sh: libvirtd $NAME exited:" >&2
            tail -n 20 "$BASE/libvirtd.out" "$BASE/log/libvirtd.log" >&2
            return 1
        fi
        echo "libvirtd.sh: libvirtd $NAME not answering" >&2
        stop
        return 1
    fi
    echo "$URI"
}

stop() {
    if alive; then
        for d in $(virsh -q -c "$URI" list --name 2>/dev/null); do
            virsh -q -c "$URI" destroy "$d" > /dev/null 2>&1 || true
        done
        pid=$(cat "$PIDFILE")
        kill "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.1; i=$((i + 1))
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
    # QEMU processes outlive libvirtd: end those this instance started.
    for f in "$BASE"/run/qemu/*.pid; do
        [ -f "$f" ] || continue
        qpid=$(cat "$f")
        if [ -n "$qpid" ] && grep -q qemu "/proc/$qpid/comm" 2>/dev/null; then
            kill "$qpid" 2>/dev/null || true
        fi
        rm -f "$f"
    done
}

case $CMD in
start) start ;;
stop) stop ;;
uri) echo "$URI" ;;
*) usage ;;
esac
