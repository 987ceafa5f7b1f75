# Sourced by tests/e2e/live.sh: the run's one boot: the bridge, the PKI,
# both libvirtd and crane-hostd, the proxy domain and the guest, up to
# both programs computing on lsrc.

# --- setup ------------------------------------------------------------------
TALL=$(e2e_now)
T0=$TALL
e2e_clguest_image || { echo "setup FAIL" >> "$RESULTS"; e2e_log "FAIL: building $E2E_CLGUEST_VM"; exit 1; }
e2e_log "image ready: $(e2e_since "$T0") s (disk $(du -k "$E2E_CLGUEST_VM/cl-root.img" | cut -f1) KiB)"
grep -q cl_pyworker "$E2E_CLGUEST_VM/check.out" 2>/dev/null ||
    { echo "setup FAIL" >> "$RESULTS"; e2e_log "FAIL: the image has no cl_pyworker"; exit 1; }

# Leftovers of an interrupted run.
for d in "$DOM" "$DOM-blocker" "$PDOM"; do
    for n in $SRC $DST; do
        [ -S "$E2E_DIR/$n/run/libvirt-sock" ] || continue
        virsh -q -c "$("$LIBVIRTD" uri $n)" destroy "$d" > /dev/null 2>&1
        virsh -q -c "$("$LIBVIRTD" uri $n)" undefine "$d" > /dev/null 2>&1
    done
done
ip link del "$BR" 2> /dev/null
rm -rf "$WORK"
mkdir -p "$WORK/proxy"
: > "$RESULTS"
ip link add "$BR" type bridge && ip addr add "$NET.1/24" dev "$BR" &&
    ip link set "$BR" up || { echo "setup FAIL" >> "$RESULTS"; e2e_log "FAIL: bridge $BR"; exit 1; }

# Every byte between the two "hosts" encrypted: the proxy link and the
# crane-hostd peers with TLS-PSK (their keys, tls = auto), the VM's memory
# with libvirt's migration TLS on a PKI made for this run and forced
# (migrate_tls_force: libvirt refuses any migration in clear, virsh's own
# in phase orchestrated included).  An instance left by an earlier run
# would keep its own qemu.conf: stopped first.
PKI=$WORK/pki
MKPKI_KEY_TYPE=rsa "$E2E_ROOT/tests/tls/mkpki.sh" "$PKI" crane-live > "$WORK/pki.out" 2>&1 ||
    { cat "$WORK/pki.out"; echo "setup FAIL" >> "$RESULTS"; exit 1; }
mkdir -p "$PKI/qemu"
cp "$PKI/CA/cacert.pem" "$PKI/qemu/ca-cert.pem"
for who in server client; do
    cp "$PKI/libvirt/${who}cert.pem" "$PKI/qemu/$who-cert.pem"
    cp "$PKI/libvirt/private/${who}key.pem" "$PKI/qemu/$who-key.pem"
done
export CRANE_LIBVIRTD_QEMU_CONF="migrate_tls_x509_cert_dir = \"$PKI/qemu\"
migrate_tls_force = 1"
"$LIBVIRTD" stop "$SRC" > /dev/null 2>&1
"$LIBVIRTD" stop "$DST" > /dev/null 2>&1
T0=$(e2e_now)
SURI=$("$LIBVIRTD" start "$SRC") || { echo "setup FAIL" >> "$RESULTS"; exit 1; }
DURI=$("$LIBVIRTD" start "$DST") || { echo "setup FAIL" >> "$RESULTS"; exit 1; }
e2e_log "libvirtd $SRC and $DST up: $(e2e_since "$T0") s"
VS="virsh -q -c $SURI"
VD="virsh -q -c $DURI"

head -c 32 /dev/urandom > "$WORK/key"
head -c 32 /dev/urandom > "$WORK/proxy.key"
chmod 600 "$WORK/key" "$WORK/proxy.key"
# The proxy domain's key disk: the key, padded to a sector.
cp "$WORK/proxy.key" "$WORK/proxy-key.img"
truncate -s 512 "$WORK/proxy-key.img"
e2e_rng_xml > "$WORK/rng.xml"

# The proxy domain: the same image in its proxy role, no GPU of the pool
# (it would own one in production), the key as a second read-only disk, a
# console that survives a restart, and a pcie-to-pci-bridge (on a root
# port of its own) for the shared memory crane-hostd plugs in: libvirt
# puts an ivshmem device, conventional PCI, only on such a bus (phase shm;
# the guest gets one too).
e2e_cl_domain_xml "$PDOM" "$WORK/proxy" "$E2E_CLGUEST_VM" 768 \
    "crane.role=proxy crane.ip=$NET.2/24 crane.proxy_isolation=$PROXY_ISOLATION" |
    sed -e '/<rng[ >]/,/<\/rng>/d' \
        -e "s|<source path='$WORK/proxy/console.log'/>|<source path='$WORK/proxy/console.log' append='on'/>|" |
    awk -v key="$WORK/proxy-key.img" -v nic="$(nic 52:54:00:77:00:02)" '
        /<memballoon/ {
            print "    <controller type=\x27pci\x27 model=\x27pcie-root-port\x27/>"
            print "    <controller type=\x27pci\x27 model=\x27pcie-to-pci-bridge\x27/>"
            print "    <disk type=\x27file\x27 device=\x27disk\x27>"
            print "      <driver name=\x27qemu\x27 type=\x27raw\x27/>"
            print "      <source file=\x27" key "\x27/>"
            print "      <target dev=\x27vdb\x27 bus=\x27virtio\x27/>"
            print "      <readonly/>"
            print "    </disk>"
            print nic
        }
        { print }' > "$WORK/proxy.xml"
for u in "$SURI" "$DURI"; do e2e_forget_domains "$u" "$DOM" "$PDOM" "$DOM-blocker"; done
$VD define "$WORK/proxy.xml" > /dev/null || { echo "setup FAIL" >> "$RESULTS"; exit 1; }

# The programs stop AFTER iterations after the GPU's return on ldst: its
# second return when migrate-fails (a rollback) runs first.
BACKS=1
case " $RUN_PHASES " in *" migrate-fails "*) BACKS=2 ;; esac
e2e_cl_domain_xml "$DOM" "$WORK" "$E2E_CLGUEST_VM" "$MEM" \
    "crane.ip=$NET.10/24 crane.py=1 crane.cl_backs=$BACKS crane.cl_after=$AFTER crane.cl_after_s=$AFTER_S crane.cl_words=65536 crane.victim=1${CRANE_E2E_KARGS:+ $CRANE_E2E_KARGS}" |
    awk -v nic="$(nic 52:54:00:77:00:10)" '/<memballoon/ { print nic
        print "    <controller type=\x27pci\x27 model=\x27pcie-root-port\x27/>"
        print "    <controller type=\x27pci\x27 model=\x27pcie-to-pci-bridge\x27/>" } { print }' \
    > "$WORK/domain.xml"
$VS define "$WORK/domain.xml" > /dev/null || { echo "setup FAIL" >> "$RESULTS"; exit 1; }

virsh -c "$SURI" event --all --loop --timestamp > "$WORK/events-src.log" 2>&1 &
EVPIDS="$EVPIDS $!"
virsh -c "$DURI" event --all --loop --timestamp > "$WORK/events-dst.log" 2>&1 &
EVPIDS="$EVPIDS $!"

E2E_WORK=$WORK
CONF="prepare_deadline_ms = 120000
resume_deadline_ms = 90000
proxy = $PROXY_EP
proxy_key = $WORK/proxy.key
proxy_start_ms = 180000
proxy_timeout_ms = 15000"
T0=$(e2e_now)
# migrate_tls = auto (the default) reads each host's qemu.conf: TLS forced.
e2e_hostd src "$SURI" $PORT0 $((PORT0 + 1)) "$CONF" \
    "qemu_conf = $E2E_DIR/$SRC/etc/qemu.conf"
e2e_hostd dst "$DURI" $((PORT0 + 2)) $((PORT0 + 3)) "$CONF" "proxy_domain = $PDOM" \
    "proxy_shm_mb = $SHM_MB" "qemu_conf = $E2E_DIR/$DST/etc/qemu.conf"
step "crane-hostd src up" "$WORK/hostd-src.log" 'crane-hostd on src'
step "crane-hostd dst up" "$WORK/hostd-dst.log" 'crane-hostd on dst'
$VS start "$DOM" > /dev/null || fail "start $DOM"
step "dst's crane-hostd boots the proxy domain" "$WORK/hostd-dst.log" "proxy domain $PDOM started"
PC=$WORK/proxy/console.log
C=$WORK/console.log
step "proxy domain on the network" "$PC" '^CRANE-NET eth0' 1 "$CL_TIMEOUT"
step "crane-proxy listens in the proxy domain" "$PC" '^CRANE-PROXY-UP' 1 "$CL_TIMEOUT"
step "guest on the network" "$C" '^CRANE-NET eth0' 1 "$CL_TIMEOUT"
step "crane-guestd up in the guest" "$C" 'CRANE-GUESTD-UP' 1 "$CL_TIMEOUT"
step "cl_worker registered" "$C" '^CRANE-CL-REGISTERED' 1 "$CL_TIMEOUT"
step "cl_pyworker registered" "$C" '^CRANE-PY-REGISTERED' 1 "$CL_TIMEOUT"
# crane in both VMs is what its .debs installed (vmimages/install-debs.sh).
e2e_clguest_packaged "$C" "$PC" CL PY
wait_progress "$C" CL 100
wait_progress "$C" PY 50
grep -q 'RESULT' "$C" && fail "a program ended on src: $(grep RESULT "$C")"
e2e_log "setup: $(e2e_since "$TALL") s"
[ $FAILED = 0 ] || { echo "setup FAIL" >> "$RESULTS"; finish; }
