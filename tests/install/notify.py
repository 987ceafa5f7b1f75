#!/usr/bin/env python3
"""Readiness told to systemd: each daemon started as a Type=notify unit
would be (NOTIFY_SOCKET naming a datagram socket this test listens on)
must send READY=1 once its listening socket accepts connections, and
STOPPING=1 then exit 0 on SIGTERM.  Its stderr is "the journal" too
(JOURNAL_STREAM names the file): every line it logs must carry a syslog
priority, "<6>crane-proxy info: ...", and no time stamp.

    notify.py --list        the cases
    notify.py CASE          runs one: exit 0 pass, 1 fail
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

B = os.environ.get("B", "build")


def guestd(t):
    conf = os.path.join(t, "guestd.conf")
    with open(conf, "w") as f:
        f.write("modprobe = /bin/true\nmodules =\n")
    return ([B + "/bin/crane-guestd", "--config", conf,
             "--listen", t + "/guest.sock", "--host", "unix:" + t + "/host.sock",
             "--control", "unix:" + t + "/ctl.sock",
             "--state", t + "/guestd.state"],
            [t + "/guest.sock", t + "/ctl.sock", t + "/host.sock"])


def hostd(t):
    return ([B + "/bin/crane-hostd", "--config", "/dev/null",
             "--uri", "test:///default", "--control", "unix:" + t + "/hostd.sock",
             "--peer-listen", "none", "--peer-key", "none", "--http", "none",
             "--history", t + "/history.db"],
            [t + "/hostd.sock"])


def proxy(t):
    # The supervisor is ready once its first worker is.
    return ([B + "/bin/crane-proxy", "--listen", "unix:" + t + "/px.sock"],
            [t + "/px.sock"])


def proxy_single(t):
    return ([B + "/bin/crane-proxy", "--isolation", "none",
             "--listen", "unix:" + t + "/px.sock"],
            [t + "/px.sock"])


CASES = {"guestd": guestd, "hostd": hostd, "proxy": proxy,
         "proxy-single": proxy_single}


def fail(why, log):
    print("FAIL: " + why)
    try:
        with open(log) as f:
            sys.stdout.write(f.read()[-3000:])
    except OSError:
        pass
    sys.exit(1)


def receive(sock, proc, want, log, seconds=30):
    """Datagrams until one equal to WANT; fails on anything else first."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sock.settimeout(0.2)
        try:
            msg = sock.recv(4096).decode()
        except socket.timeout:
            if proc.poll() is not None:
                fail("the daemon exited (%d) before %s" % (proc.returncode,
                                                            want), log)
            continue
        print("received %r" % msg)
        if msg == want:
            return
        fail("got %r while waiting for %s" % (msg, want), log)
    fail("no %s within %d s" % (want, seconds), log)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    if sys.argv[1] == "--list":
        print(" ".join(CASES))
        return
    case = CASES.get(sys.argv[1])
    if not case:
        print("unknown case " + sys.argv[1])
        sys.exit(2)
    t = tempfile.mkdtemp(prefix="crane-notify-")
    argv, sockets = case(t)
    # An abstract name for one case, a path for the others: both forms
    # systemd uses.
    if sys.argv[1] == "proxy":
        address = "@crane-notify-%d" % os.getpid()
        bind_to = "\0" + address[1:]
    else:
        address = bind_to = os.path.join(t, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(bind_to)
    log = os.path.join(t, "daemon.log")
    env = dict(os.environ, NOTIFY_SOCKET=address)
    with open(log, "w") as out:
        st = os.fstat(out.fileno())
        env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                env=env)
    try:
        receive(sock, proc, "READY=1", log)
        for path in sockets:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                c.connect(path)
            except OSError as e:
                fail("READY=1 came before %s listened: %s" % (path, e), log)
            c.close()
        print("READY=1 after %d socket(s) listened" % len(sockets))
        proc.send_signal(signal.SIGTERM)
        receive(sock, proc, "STOPPING=1", log)
        rc = proc.wait(timeout=30)
        if rc != 0:
            fail("exit %d after SIGTERM" % rc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with open(log) as f:
        lines = f.read().splitlines()
    journal = re.compile(r"<(3|4|6|7)>crane-[a-z]+(\[\d+\])? "
                         r"(error|warn|info|debug): \S")
    bad = [l for l in lines if not journal.match(l)]
    if not lines or bad:
        fail("%d line(s) logged, these without a journal priority: %r"
             % (len(lines), bad[:3]), log)
    pri = {"3": "error", "4": "warn", "6": "info", "7": "debug"}
    if any(pri[l[1]] != journal.match(l).group(3) for l in lines):
        fail("a priority that is not its level's", log)
    print("%d line(s) logged, each with its journal priority" % len(lines))
    shutil.rmtree(t, ignore_errors=True)
    print("PASS " + sys.argv[1])


main()
