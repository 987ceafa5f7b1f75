# Sourced by tests/install/deb.sh inside its private mount namespace:
# deb_cycle T installs T's packages with the real dpkg over overlays of
# /usr, /etc and /var (their writes land in T/ns), then upgrades, removes
# and purges them, checking each step.

# overlay DIR: DIR's writes from now on go to a tmpfs under $NS.
overlay() {
    mkdir -p "$NS/up$1" "$NS/work$1"
    mount -t overlay overlay \
        -o "lowerdir=$1,upperdir=$NS/up$1,workdir=$NS/work$1" "$1"
}

no_crane_diversions() { ! dpkg-divert --list | grep -q 'by crane-guest$'; }
enabled() { [ -L "/etc/systemd/system/multi-user.target.wants/$1.service" ]; }

# A vendor package installed after crane-guest: its .icd is taken over by
# crane-guest's trigger.
fake_vendor() {
    local d=$T/fakevendor
    mkdir -p "$d/DEBIAN" "$d/etc/OpenCL/vendors"
    echo /nonexistent/libfakecl.so >"$d/etc/OpenCL/vendors/fakecl.icd"
    cat >"$d/DEBIAN/control" <<CTL
Package: crane-test-fakecl
Version: 1
Architecture: all
Maintainer: crane tests <tests@crane.invalid>
Description: an OpenCL vendor's .icd file, for tests/install/deb.sh
CTL
    dpkg-deb -b "$d" "$T/fakecl.deb" >/dev/null
}

# plain_program [ENV...]: a program linked to libOpenCL, started plainly,
# under the packaged libcrane (crane.icd); its shim log in $T/plain.log.
plain_program() {
    rm -f "$T/plain.log"
    env -u OCL_ICD_VENDORS -u OCL_ICD_FILENAMES -u CRANE_VENDORS_DIR \
        -u LD_PRELOAD CRANE_SOCKET=none CRANE_LOG_LEVEL=info \
        CRANE_LOG_FILE="$T/plain.log" "$@" "$B/tests/programs/buffers"
}

deb_cycle() {
    T=$1
    NS=$T/ns
    mkdir -p "$NS"
    mount -t tmpfs tmpfs "$NS" || fail "no tmpfs in the namespace"
    for d in /usr /etc /var; do overlay $d || fail "cannot overlay $d"; done
    mount -t tmpfs tmpfs /run || fail "no tmpfs /run"
    local guest host proxy f
    guest=$(ls "$T"/crane-guest_*.deb)
    host=$(ls "$T"/crane-host_*.deb)
    proxy=$(ls "$T"/crane-proxy_*.deb)
    getent group crane >/dev/null && groupdel crane

    echo "- install"
    dpkg -i "$guest" "$host" "$proxy" >"$T/dpkg.log" 2>&1 ||
        { cat "$T/dpkg.log"; fail "dpkg -i failed"; }
    for f in /usr/sbin/crane-hostd /usr/sbin/crane-hostctl \
        /usr/bin/crane-migrate /usr/sbin/crane-guestd /usr/sbin/cranectl \
        /usr/bin/crane-run /usr/lib/crane/libcrane.so /usr/sbin/crane-proxy \
        /etc/crane/hostd.conf /etc/crane/guestd.conf /etc/crane/proxy.env \
        /usr/share/man/man8/crane-hostd.8.gz /usr/share/man/man1/crane-run.1.gz \
        /usr/share/doc/crane-guest/packaging.md.gz; do
        [ -e "$f" ] || fail "$f not installed"
    done
    dpkg-query -W -f='${Conffiles}\n' crane-guest | grep -q /etc/crane/guestd.conf ||
        fail "guestd.conf is not a conffile"
    getent group crane >/dev/null || fail "postinst made no crane group"
    [ -d /var/lib/crane ] || fail "postinst made no /var/lib/crane"
    for u in crane-guestd crane-hostd crane-proxy; do
        enabled $u || fail "$u.service not enabled"
    done
    systemd-analyze verify /lib/systemd/system/crane-guestd.service \
        /lib/systemd/system/crane-hostd.service \
        /lib/systemd/system/crane-proxy.service >"$T/verify.log" 2>&1 ||
        { cat "$T/verify.log"; fail "systemd-analyze verify"; }
    for f in /usr/sbin/crane-guestd /usr/sbin/crane-hostd /usr/sbin/crane-proxy \
        /usr/lib/crane/libcrane.so; do
        hardening-check -q --nofortify --nocfprotection "$f" >"$T/hardening.log" 2>&1 ||
            { cat "$T/hardening.log"; fail "$f: not hardened"; }
    done
    [ "$(cat /etc/OpenCL/vendors/crane.icd)" = /usr/lib/crane/libcrane.so ] ||
        fail "no crane.icd naming libcrane"
    ls /etc/OpenCL/vendors
    [ "$(ls /etc/OpenCL/vendors)" = crane.icd ] ||
        fail "vendors' .icd files left beside crane.icd"
    ls /etc/crane/vendors.d/*.icd >/dev/null 2>&1 || fail "no vendor taken over"
    dpkg-divert --list | grep 'by crane-guest$'

    echo "- a plain program under the packaged libcrane, and CRANE_DISABLE=1"
    plain_program || fail "a plain program failed under crane.icd"
    grep -q 'native: .* platform(s)' "$T/plain.log" ||
        fail "libcrane did not load the vendor (no shim log)"
    plain_program CRANE_DISABLE=1 || fail "CRANE_DISABLE=1 program failed"
    grep -q 'CRANE_DISABLE: the program runs' "$T/plain.log" ||
        fail "CRANE_DISABLE=1: the shim did not step aside"

    echo "- a vendor installed later (the trigger)"
    fake_vendor
    dpkg -i "$T/fakecl.deb" >>"$T/dpkg.log" 2>&1 || fail "fake vendor"
    [ -e /etc/crane/vendors.d/fakecl.icd ] &&
        [ ! -e /etc/OpenCL/vendors/fakecl.icd ] ||
        fail "the trigger did not take the new vendor over"
    dpkg -P crane-test-fakecl >>"$T/dpkg.log" 2>&1 || fail "fake vendor purge"

    echo "- upgrade (a newer version; the admin's conffile edit kept)"
    echo "# an administrator's edit" >>/etc/crane/guestd.conf
    rm -rf "$T/up"
    dpkg-deb -R "$guest" "$T/up"
    sed -i 's/^Version: \(.*\)$/Version: \1+1/' "$T/up/DEBIAN/control"
    dpkg-deb -b "$T/up" "$T/guest-up.deb" >/dev/null
    dpkg -i --force-confold "$T/guest-up.deb" >>"$T/dpkg.log" 2>&1 ||
        { tail -20 "$T/dpkg.log"; fail "upgrade failed"; }
    grep -q "an administrator's edit" /etc/crane/guestd.conf ||
        fail "the upgrade lost the conffile edit"
    [ "$(ls /etc/OpenCL/vendors)" = crane.icd ] || fail "upgrade: vendors back"
    enabled crane-guestd || fail "upgrade: crane-guestd no longer enabled"
    plain_program || fail "a plain program failed after the upgrade"

    echo "- remove crane-guest: the vendors given back"
    dpkg -r crane-guest >>"$T/dpkg.log" 2>&1 || fail "dpkg -r"
    [ ! -e /etc/OpenCL/vendors/crane.icd ] || fail "crane.icd left after remove"
    ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 || fail "vendors not back"
    no_crane_diversions || fail "diversions left after remove"
    [ -e /etc/crane/guestd.conf ] || fail "remove took the conffile"
    [ -e /usr/sbin/crane-guestd ] && fail "remove left crane-guestd"

    echo "- purge all"
    dpkg -P crane-guest crane-host crane-proxy >>"$T/dpkg.log" 2>&1 ||
        { tail -20 "$T/dpkg.log"; fail "dpkg -P"; }
    [ ! -e /etc/crane ] || { find /etc/crane; fail "purge left /etc/crane"; }
    [ ! -e /var/lib/crane ] || fail "purge left /var/lib/crane"
    no_crane_diversions || fail "diversions left after purge"
    for u in crane-guestd crane-hostd crane-proxy; do
        enabled $u && fail "$u.service still enabled after purge"
    done
    dpkg-query -W crane-guest crane-host crane-proxy 2>/dev/null | grep -q . &&
        fail "packages still known to dpkg"
    return 0
}
