# Shared helpers of the e2e shell tests (sourced, not run): paths, timing, domain XML.

E2E_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
E2E_DIR=${CRANE_E2E_DIR:-/tmp/crane-e2e}
E2E_VM=${CRANE_VM_DIR:-$E2E_ROOT/build/e2e-vm}
export CRANE_E2E_DIR=$E2E_DIR

e2e_now() { date +%s.%N; }
# e2e_since T0: seconds elapsed since T0 (from e2e_now), 3 decimals.
e2e_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
e2e_log() { echo "[$(date +%T.%3N)] $*"; }

# e2e_guest_image: builds the initramfs guest when it is missing.
e2e_guest_image() {
    if [ ! -f "$E2E_VM/vmlinuz" ] || [ ! -f "$E2E_VM/initramfs.img" ]; then
        "$E2E_ROOT/vmimages/build-initramfs.sh" "$E2E_VM" >&2 || return 1
    fi
}

# e2e_wait_for FILE REGEX TIMEOUT_S [N]: waits until N lines (default 1) of
# FILE match (grep -E), polling every 20 ms; 0 when seen, 1 on timeout.
e2e_wait_for() {
    _end=$(awk -v n="$(date +%s.%N)" -v t="$3" 'BEGIN { printf "%.3f", n + t }')
    while :; do
        if [ -f "$1" ] && [ "$(grep -cE "$2" "$1")" -ge "${4:-1}" ]; then
            return 0
        fi
        if awk -v n="$(date +%s.%N)" -v e="$_end" 'BEGIN { exit !(n > e) }'; then
            return 1
        fi
        sleep 0.02
    done
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

# e2e_domain_xml NAME DIR: a TCG q35 domain booting the initramfs guest,
# console to DIR/console.log, guest channel on DIR/guest0.sock, the rng
# stand-in, and spare pcie-root-ports for hotplug.
e2e_domain_xml() {
    cat <<XML
<domain type='qemu'>
  <name>$1</name>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>$E2E_VM/vmlinuz</kernel>
    <initrd>$E2E_VM/initramfs.img</initrd>
    <cmdline>console=ttyS0 quiet panic=-1</cmdline>
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
