# Shared helpers of the e2e shell tests (sourced, not run): paths, timing, domain XML.

E2E_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$E2E_ROOT/tests/wait.sh"
E2E_DIR=${CRANE_E2E_DIR:-/tmp/crane-e2e}
E2E_VM=${CRANE_VM_DIR:-$E2E_ROOT/build/e2e-vm}
# The guest with crane-guestd inside (vmimages/build-guest.sh), sharing
# E2E_VM's kernel download.
E2E_GUESTD_VM=${CRANE_GUESTD_VM_DIR:-$E2E_VM/guestd}
export CRANE_E2E_DIR=$E2E_DIR

e2e_now() { date +%s.%N; }
# e2e_since T0: seconds elapsed since T0 (from e2e_now), 3 decimals.
e2e_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
e2e_log() { echo "[$(date +%T.%3N)] $*"; }

# e2e_stale IMAGE FILE...: true when IMAGE is missing or older than a FILE.
e2e_stale() {
    _img=$1
    shift
    [ -f "$_img" ] || return 0
    for _f in "$@"; do
        [ -n "$(find "$_f" -newer "$_img" 2>/dev/null)" ] && return 0
    done
    return 1
}

# e2e_guest_image: builds the initramfs guest when it is missing or older
# than its build script.
e2e_guest_image() {
    if [ ! -f "$E2E_VM/vmlinuz" ] ||
        e2e_stale "$E2E_VM/initramfs.img" "$E2E_ROOT/vmimages/build-initramfs.sh"; then
        "$E2E_ROOT/vmimages/build-initramfs.sh" "$E2E_VM" >&2 || return 1
    fi
}

# e2e_guestd_image: builds the guest with crane-guestd (E2E_GUESTD_VM) when
# it is missing or older than the daemon, cranectl or the build's files.
e2e_guestd_image() {
    if [ ! -f "$E2E_GUESTD_VM/vmlinuz" ] ||
        e2e_stale "$E2E_GUESTD_VM/initramfs.img" \
            "$E2E_ROOT/build/bin/crane-guestd" "$E2E_ROOT/build/bin/cranectl" \
            "$E2E_ROOT/build/tests/guest/fake_shim" \
            "$E2E_ROOT"/vmimages/*.sh "$E2E_ROOT"/vmimages/guestd/*; then
        CRANE_VM_CACHE=$E2E_VM/cache \
            "$E2E_ROOT/vmimages/build-guest.sh" "$E2E_GUESTD_VM" >&2 || return 1
    fi
}

# e2e_wait FILE QUIET_S COND...: tests/wait.sh's wait_until COND with what
# moves in an e2e test as progress: any file in FILE's folder (consoles,
# event logs, daemons' logs) and the CPU of every QEMU libvirt runs (a TCG
# guest on a loaded machine boots slowly but keeps using CPU); fails after
# QUIET_S seconds in which none moved, or QUIET_S x CRANE_WAIT_CAP_FACTOR
# (10) in all, at most CRANE_E2E_CAP (900) s.  Only one e2e run holds a
# machine (run.sh's lock), so these QEMU are the test's.
e2e_wait() {
    _ew_f=$1 _ew_q=$2
    shift 2
    _ew_c=$((_ew_q * ${CRANE_WAIT_CAP_FACTOR:-10}))
    [ "$_ew_c" -le "${CRANE_E2E_CAP:-900}" ] || _ew_c=${CRANE_E2E_CAP:-900}
    wait_until -q "$_ew_q" -c "$_ew_c" -f "$(dirname "$_ew_f")" \
        -m '^/usr/bin/qemu-system-x86_64 -name guest=' -n "$*" -- "$@"
}

# _e2e_has FILE REGEX N: N lines (at least) of FILE match (grep -E).
_e2e_has() {
    [ -f "$1" ] && [ "$(grep -cE "$2" "$1")" -ge "$3" ]
}

# e2e_wait_for FILE REGEX QUIET_S [N]: waits (e2e_wait) until N lines
# (default 1) of FILE match (grep -E); 0 when seen, 1 when not.
e2e_wait_for() {
    e2e_wait "$1" "$3" _e2e_has "$1" "$2" "${4:-1}"
}

# e2e_ctl SOCKET OUT WANT ARGS...: build/bin/cranectl ARGS connected to a
# guest's channel socket (the host end crane-hostd uses), waiting up to
# CRANE_E2E_TIMEOUT s; output to OUT and indented on stdout after one timed
# line. 0 when cranectl exited WANT (0 done, 1 failed), else 1.
e2e_ctl() {
    _sock=$1 _out=$2 _want=$3
    shift 3
    _t0=$(e2e_now)
    "$E2E_ROOT/build/bin/cranectl" --connect "unix:$_sock" \
        --timeout "${CRANE_E2E_TIMEOUT:-30}" "$@" > "$_out" 2>&1
    _rc=$?
    e2e_log "cranectl $*: exit $_rc in $(e2e_since "$_t0") s"
    grep -v '^programs: 0$' "$_out" | sed 's/^/    /'
    [ "$_rc" = "$_want" ]
}

# e2e_forget_domains URI NAME...: destroys and undefines each NAME on URI,
# quietly, before a case defines its own: the libvirtd instances outlive a
# run killed mid-case (its EXIT trap never ran), and a domain it left would
# make this run's define or migration fail ("already exists with uuid").
e2e_forget_domains() {
    _fd_uri=$1
    shift
    for _fd_d in "$@"; do
        virsh -q -c "$_fd_uri" destroy "$_fd_d" > /dev/null 2>&1
        virsh -q -c "$_fd_uri" undefine --nvram "$_fd_d" > /dev/null 2>&1 ||
            virsh -q -c "$_fd_uri" undefine "$_fd_d" > /dev/null 2>&1
    done
    return 0
}

# e2e_rng_xml: the stand-in GPU (virtio-rng with a user alias).
e2e_rng_xml() {
    cat <<XML
<rng model='virtio'>
  <backend model='random'>/dev/urandom</backend>
  <alias name='ua-gpu0'/>
</rng>
XML
}

# e2e_domain_xml NAME DIR [IMAGE_DIR [KERNEL_ARGS]]: a TCG q35 domain
# booting the initramfs guest of IMAGE_DIR (default E2E_VM; E2E_GUESTD_VM
# for crane-guestd inside), console to DIR/console.log, guest channel on
# DIR/guest0.sock, the rng stand-in, and spare pcie-root-ports for hotplug.
# KERNEL_ARGS are appended to the guest's command line, e.g.
# "acpi_mask_gpe=0x01": the guest then ignores ACPI PCI hotplug (QEMU
# signals it on GPE 1 on q35) and an unplug never completes
# (tests/e2e/unplug-ignored.sh).
e2e_domain_xml() {
    _img=${3:-$E2E_VM}
    cat <<XML
<domain type='qemu'>
  <name>$1</name>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>$_img/vmlinuz</kernel>
    <initrd>$_img/initramfs.img</initrd>
    <cmdline>console=ttyS0 quiet panic=-1${4:+ $4}</cmdline>
  </os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <controller type='pci' model='pcie-root'/>
    <controller type='pci' model='pcie-root-port'/>
    <controller type='pci' model='pcie-root-port'/>
    <controller type='pci' model='pcie-root-port'/>
    <controller type='pci' model='pcie-root-port'/>
    <controller type='pci' model='pcie-root-port'/>
    <controller type='virtio-serial'/>
    <serial type='file'>
      <source path='$2/console.log'/>
      <target port='0'/>
    </serial>
    <channel type='unix'>
      <source mode='bind' path='$2/guest0.sock'/>
      <target type='virtio' name='org.crane.guest.0'/>
    </channel>
$(e2e_rng_xml | sed 's/^/    /')
    <memballoon model='none'/>
  </devices>
</domain>
XML
}

# e2e_dest_xml DIR < XML > DEST_XML: the destination XML of a live
# migration from a domain XML (e2e_domain_xml's, or `virsh dumpxml
# --migratable`): the paths the source QEMU holds open renamed
# (DIR/guest0.sock -> DIR/guest0-dst.sock, DIR/console.log ->
# DIR/console-dst.log) and the stand-in GPU removed (it is detached before
# the migration and attached again on the destination).
e2e_dest_xml() {
    sed -e "s|$1/guest0.sock|$1/guest0-dst.sock|g" \
        -e "s|$1/console.log|$1/console-dst.log|g" \
        -e "/<rng[ >]/,/<\/rng>/d"
}

# The OpenCL guest (vmimages/build-clguest.sh): crane's packages (built
# from this tree once per source, vmimages/build-debs.sh) installed on a
# read-only disk, crane-guestd and cl_worker under them on PoCL, sharing
# E2E_VM's kernel.
E2E_CLGUEST_VM=${CRANE_CLGUEST_VM_DIR:-$E2E_VM/clguest}
E2E_DEB_CACHE=${CRANE_DEB_CACHE:-$E2E_VM/debs}

# e2e_clguest_image: builds E2E_CLGUEST_VM when it is missing, older than
# its scripts and files, cl_worker or cl_pyworker, or holds other
# packages than the tree's (make deb, cached by the source: a few minutes
# when the code changed; then about 25 s, 320 MB).
e2e_clguest_image() {
    _debs=$("$E2E_ROOT/vmimages/build-debs.sh" "$E2E_DEB_CACHE") || return 1
    _same=1
    for _d in "$_debs"/crane-guest_*.deb "$_debs"/crane-proxy_*.deb; do
        cmp -s "$_d" "$E2E_CLGUEST_VM/debs/${_d##*/}" || _same=0
    done
    if [ $_same = 0 ] || [ ! -f "$E2E_CLGUEST_VM/vmlinuz" ] ||
        [ ! -f "$E2E_CLGUEST_VM/cl-root.img" ] ||
        e2e_stale "$E2E_CLGUEST_VM/initramfs.img" \
            "$E2E_ROOT/build/tests/guest/cl_worker" \
            "$E2E_ROOT/tests/guest/cl_pyworker.py" \
            "$E2E_ROOT"/vmimages/*.sh "$E2E_ROOT"/vmimages/guestd/* \
            "$E2E_ROOT"/vmimages/clguest/*; then
        CRANE_VM_CACHE=$E2E_VM/cache CRANE_DEB_DIR=$_debs \
            "$E2E_ROOT/vmimages/build-clguest.sh" "$E2E_CLGUEST_VM" >&2 || return 1
    fi
}

# e2e_clguest_pkg_check CONSOLE TAG PATH: the console's crane-pkg-check
# line for TAG says PATH is the packaged file (md5 ok) and its md5 is the
# one in the md5sums of the image's .deb (not only the copy in the VM's
# dpkg database); prints that line.  Waits for the line (CRANE_E2E_TIMEOUT).  1 (with the reason on stderr) if not.
e2e_clguest_pkg_check() {
    e2e_wait_for "$1" "CRANE-PKG $2 pid [0-9]* $3 " "${CRANE_E2E_TIMEOUT:-30}" ||
        { echo "no CRANE-PKG line for $2 $3" >&2; return 1; }
    _line=$(tr -d '\r' < "$1" | grep -a "CRANE-PKG $2 pid [0-9]* $3 " | tail -n 1 |
        sed 's/.*CRANE-PKG /CRANE-PKG /')
    [ -n "$_line" ] || { echo "no CRANE-PKG line for $2 $3" >&2; return 1; }
    case $_line in *" ok") ;; *) echo "$_line" >&2; return 1 ;; esac
    _pkg=$(echo "$_line" | awk '{ print $6 }')
    _md5=$(echo "$_line" | awk '{ print $8 }')
    set -- "$E2E_CLGUEST_VM/debs/${_pkg}"_*.deb "$3"
    _want=$(dpkg-deb --info "$1" md5sums | awk -v p="${2#/}" '$2 == p { print $1 }')
    [ -n "$_want" ] && [ "$_want" = "$_md5" ] ||
        { echo "$2: md5 $_md5 in the VM, ${_want:-none} in $1" >&2; return 1; }
    echo "$_line"
}

# e2e_clguest_unit_exec UNIT: the ExecStart= of UNIT as the image's .debs
# ship it (crane-guest's or crane-proxy's unit file, read from the .deb).
e2e_clguest_unit_exec() {
    for _d in "$E2E_CLGUEST_VM"/debs/*.deb; do
        dpkg-deb --fsys-tarfile "$_d" | tar -xOf - "./lib/systemd/system/$1" 2>/dev/null
    done | sed -n 's/^ExecStart=//p' | tail -n 1
}

# e2e_clguest_packaged CONSOLE PROXY_CONSOLE TAG...: crane in the OpenCL
# VMs is the packaged one, installed from the image's .debs: on CONSOLE
# crane-guestd (started with its unit's ExecStart=, as the .deb has it)
# and the libcrane.so each program TAG (CL, PY, VC) maps; on PROXY_CONSOLE
# (none when empty) crane-proxy, started from its unit (ExecStart=
# `crane-proxy $CRANE_PROXY_OPTS`, expanded).  Each file's md5 in the VM
# equals dpkg's and the .deb's (e2e_clguest_pkg_check).  Calls fail (lib's
# step helpers) for each that does not hold.
e2e_clguest_packaged() {
    _c=$1 _pc=$2
    shift 2
    e2e_clguest_pkg_check "$_c" guestd /usr/sbin/crane-guestd ||
        fail "the guest's crane-guestd is not the packaged file"
    _exec=$(e2e_clguest_unit_exec crane-guestd.service)
    [ -n "$_exec" ] && tr -d '\r' < "$_c" | grep -aqF "CRANE-UNIT crane-guestd.service exec: $_exec" ||
        fail "crane-guestd not started with its unit's ExecStart=${_exec:-?}"
    for _t in "$@"; do
        e2e_clguest_pkg_check "$_c" "$_t" /usr/lib/crane/libcrane.so ||
            fail "program $_t does not run the packaged libcrane.so"
    done
    [ -n "$_pc" ] || return 0
    e2e_clguest_pkg_check "$_pc" proxy /usr/sbin/crane-proxy ||
        fail "the proxy domain's crane-proxy is not the packaged file"
    _exec=$(e2e_clguest_unit_exec crane-proxy.service)
    [ "${_exec%% *}" = /usr/sbin/crane-proxy ] &&
        tr -d '\r' < "$_pc" | grep -aq "CRANE-UNIT crane-proxy.service exec: ${_exec%% *} --listen" ||
        fail "crane-proxy not started with its unit's ExecStart=${_exec:-?}"
}

# e2e_cl_domain_xml NAME DIR IMAGE_DIR MEM_MIB [KERNEL_ARGS]: e2e_domain_xml's
# domain with MEM_MIB of RAM and IMAGE_DIR/cl-root.img as a read-only virtio
# disk (vda). libvirt migrates it without --copy-storage: a read-only disk
# needs no cache mode check, and both "hosts" see the same file.
e2e_cl_domain_xml() {
    e2e_domain_xml "$1" "$2" "$3" "${5:-}" |
        sed "s|<memory unit='MiB'>256</memory>|<memory unit='MiB'>$4</memory>|" |
        awk -v img="$3/cl-root.img" '
            /<controller type=.virtio-serial.\/>/ {
                print "    <disk type=\x27file\x27 device=\x27disk\x27>"
                print "      <driver name=\x27qemu\x27 type=\x27raw\x27/>"
                print "      <source file=\x27" img "\x27/>"
                print "      <target dev=\x27vda\x27 bus=\x27virtio\x27/>"
                print "      <readonly/>"
                print "    </disk>"
            }
            { print }'
}

# e2e_wait_count FILE PREFIX FIELD MIN QUIET_S: waits (e2e_wait) until a
# line of FILE starting with PREFIX has field FIELD >= MIN (e.g.
# CRANE-CL-PROGRESS UPTIME ITERATIONS SECONDS, field 3); prints that field
# of the newest such line. 0 when seen, 1 when not.
_e2e_count_at_least() {
    [ -f "$1" ] || return 1
    _v=$(awk -v p="$2" -v f="$3" 'index($0, p) == 1 { v = $f } END { print v }' "$1")
    [ -n "$_v" ] && [ "$_v" -ge "$4" ] 2>/dev/null
}
e2e_wait_count() {
    e2e_wait "$1" "$5" _e2e_count_at_least "$1" "$2" "$3" "$4" || return 1
    echo "$_v"
}

# --- crane-hostd pairs (hostd.sh, hostd-opencl.sh) ---------------------------
# They keep the running daemons' pids in HOSTD_PIDS, and each one's in
# PID_<NAME>; HOSTD is the binary, E2E_WORK the test's folder (key, rng.xml,
# configs, logs and histories go there).

# e2e_hostd NAME URI PEER_PORT HTTP_PORT [CONFIG_LINE...]: starts a
# crane-hostd for one "host" (its pool: the ua-gpu0 rng; peers on loopback
# with the key E2E_WORK/key), logging to E2E_WORK/hostd-NAME.log.
e2e_hostd() {
    _n=$1 _u=$2 _pp=$3 _hp=$4
    shift 4
    {
        cat <<EOF2
uri = $_u
host_name = $_n
control = unix:$E2E_WORK/$_n-hostd.sock
peer_listen = tcp:127.0.0.1:$_pp
peer_key = $E2E_WORK/key
http = 127.0.0.1:$_hp
history = $E2E_WORK/$_n.db
gpu = gpu0 xml:$E2E_WORK/rng.xml
detach_timeout_ms = 5000
attach_timeout_ms = 10000
gpu_retry_ms = 1000
log_level = debug
EOF2
        for _l in "$@"; do echo "$_l"; done
    } > "$E2E_WORK/$_n.conf"
    "$HOSTD" --config "$E2E_WORK/$_n.conf" >> "$E2E_WORK/hostd-$_n.log" 2>&1 &
    HOSTD_PIDS="$HOSTD_PIDS $!"
    eval "PID_$_n=$!"
}

# e2e_hostd_stop: SIGTERM to every daemon of HOSTD_PIDS (call it in the
# shell that started them, not in $(...)); prints one line per
# daemon that did not exit 0 or left a sanitizer report; 1 when any did.
e2e_hostd_stop() {
    _bad=0
    for _p in $HOSTD_PIDS; do kill -TERM "$_p" 2>/dev/null; done
    for _p in $HOSTD_PIDS; do
        wait "$_p"
        _r=$?
        [ $_r = 0 ] || { echo "crane-hostd (pid $_p) exited $_r on SIGTERM"; _bad=1; }
    done
    HOSTD_PIDS=""
    if grep -l 'Sanitizer' "$E2E_WORK"/hostd-*.log 2>/dev/null; then
        echo "sanitizer report"
        _bad=1
    fi
    return $_bad
}

# e2e_newest_result HTTP_PORT: the result of the newest migration in that
# crane-hostd's history (its JSON API), "none" when empty.
e2e_newest_result() {
    curl -sf "http://127.0.0.1:$1/api/migrations" 2>/dev/null |
        python3 -c 'import json,sys
m = json.load(sys.stdin)["migrations"]
print(m[0]["result"] if m else "none")'
}

# --- checks of the test scripts ---------------------------------------------

# fail WHY: logs a failed check and marks the test failed (FAILED=1); the
# script goes on and ends with its own verdict.
fail() { e2e_log "FAIL: $*"; FAILED=1; }

# step NAME FILE REGEX [N [QUIET_S]]: waits (e2e_wait_for) until N lines (1)
# of FILE match REGEX, failing after QUIET_S (default $TIMEOUT) seconds
# without progress, and logs the seconds since T0; a fail() when they do
# not come.
step() {
    if e2e_wait_for "$2" "$3" "${5:-$TIMEOUT}" "${4:-1}"; then
        e2e_log "$1: $(e2e_since "$T0") s"
    else
        fail "$1: not seen (${5:-$TIMEOUT} s without progress, or the cap)"
    fi
}

# e2e_free_ports N: prints a base port B such that B .. B+N-1 are free on
# this machine (no TCP socket bound to them), so that cases never collide
# with each other or with another process; the ports stay the case's own
# for its whole run (a daemon restarted mid-case gets the same ones).
# POSIX sh: the sh tests source this file too.
e2e_free_ports() {
    _fp_used=$(ss -Htan | awk '{ k = split($4, a, ":"); print a[k] }' |
               sort -u)
    _fp_try=0
    while [ "$_fp_try" -lt 200 ]; do
        _fp_try=$((_fp_try + 1))
        _fp_base=$(( $(od -An -N2 -tu2 /dev/urandom) % 2500 * 16 + 20000 ))
        _fp_i=0
        while [ "$_fp_i" -lt "$1" ] &&
            ! printf '%s\n' "$_fp_used" | grep -qx "$((_fp_base + _fp_i))"; do
            _fp_i=$((_fp_i + 1))
        done
        [ "$_fp_i" -eq "$1" ] && { echo "$_fp_base"; return 0; }
    done
    return 1
}
