#!/usr/bin/env python3
"""Pre-authentication flood for crane-proxy's TCP port (tests/proxy/flood.sh).

flood.py PORT SLOTS ADDRESSES AGE STATS

Keeps SLOTS TCP connections open to 127.0.0.1:PORT from ADDRESSES source
addresses (Linux answers the whole of 127/8 on loopback): half of them
from 127.0.0.2 (past any per-peer bound), the others spread over
127.0.0.3 and up (each under it, together past the bound in all).  Even slots stay idle; odd ones trickle a TLS record
header and then one byte every 0.2 s, a handshake that never completes.
A connection is re-opened 0.5 s after the proxy closed it, and once it is
AGE seconds old in any case (the proxy's handshake deadline being
longer), as an attacker who stays inside the deadline would.  Runs until
SIGTERM; then writes "connects=N closed_by_proxy=N" to STATS.
"""
import selectors
import signal
import socket
import sys
import time

port, slots, addrs, age, stats = (int(sys.argv[1]), int(sys.argv[2]),
                                  int(sys.argv[3]), float(sys.argv[4]),
                                  sys.argv[5])
sel = selectors.DefaultSelector()
conns = {}            # slot -> [socket, opened_at, last_byte_at]
due = {i: 0.0 for i in range(slots)}   # slot -> when to (re)open
counts = {"connects": 0, "closed_by_proxy": 0}
running = True


def stop(*_):
    global running
    running = False


def drop(slot, by_proxy):
    s = conns.pop(slot)[0]
    sel.unregister(s)
    s.close()
    if by_proxy:
        counts["closed_by_proxy"] += 1
    due[slot] = time.monotonic() + (0.5 if by_proxy else 0.0)


def address(slot):
    if addrs > 1 and slot % 4 >= 2:
        return "127.0.0.%d" % (3 + (slot // 4) % (addrs - 1))
    return "127.0.0.2"


def open_slot(slot):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((address(slot), 0))
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        due[slot] = time.monotonic() + 0.5
        return
    now = time.monotonic()
    conns[slot] = [s, now, now]
    sel.register(s, selectors.EVENT_READ, slot)
    counts["connects"] += 1
    del due[slot]
    if slot % 2:
        try:
            s.send(b"\x16\x03\x01\x02\x00")   # a ClientHello of 512 bytes
        except OSError:
            pass


signal.signal(signal.SIGTERM, stop)
while running:
    now = time.monotonic()
    for slot in [k for k, t in due.items() if t <= now]:
        open_slot(slot)
    for key, _ in sel.select(timeout=0.05):
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:
            drop(key.data, True)
    now = time.monotonic()
    for slot, c in list(conns.items()):
        if now - c[1] >= age:
            drop(slot, False)
        elif slot % 2 and now - c[2] >= 0.2:
            c[2] = now
            try:
                c[0].send(b"\x01")
            except OSError:
                drop(slot, True)
with open(stats, "w") as f:
    f.write("connects=%d closed_by_proxy=%d\n" % (counts["connects"],
                                                 counts["closed_by_proxy"]))
