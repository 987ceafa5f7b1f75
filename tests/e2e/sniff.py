#!/usr/bin/env python3
"""Watches the TCP bytes of named links on every interface of this machine
(an AF_PACKET socket: loopback, the e2e bridge and its taps) and says, per
link, how many payload bytes crossed and which clear-text markers were seen
in them: the e2e tests' proof that a link was encrypted (tests/e2e/live.sh).

Usage: sniff.py OUT NAME=PORTS:MARKER[,MARKER...] ...
  Runs until SIGTERM or SIGINT, then writes OUT (JSON):
  {"NAME": {"bytes": N, "packets": N, "seen": [MARKER...]}, ...}.
  OUT.ready appears once the socket listens.  PORTS: PORT or LO-HI, a
  comma between several; a packet belongs to NAME when either of its TCP
  ports is among them.  A marker split
  between two segments of a flow is found too (the flow's last bytes are
  kept).  Needs root (CAP_NET_RAW).  Exit 0, 2 on bad usage.
"""
import json
import signal
import socket
import struct
import sys

ETH_P_ALL = 3
TAIL = 256


def parse_spec(spec):
    name, rest = spec.split("=", 1)
    ports, markers = rest.split(":", 1)
    ranges = []
    for r in ports.split(","):
        lo, _, hi = r.partition("-")
        ranges.append((int(lo), int(hi or lo)))
    return {"name": name, "ranges": ranges,
            "markers": [m.encode() for m in markers.split(",") if m],
            "bytes": 0, "packets": 0, "seen": set()}


def watched(link, sport, dport):
    return any(lo <= sport <= hi or lo <= dport <= hi
               for lo, hi in link["ranges"])


def tcp_payload(frame):
    """(src, dst, sport, dport, payload) of an IPv4 TCP frame, or None."""
    if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[0] >> 4 != 4 or ip[9] != 6 or len(ip) < ihl + 20:
        return None
    total = struct.unpack("!H", ip[2:4])[0]
    tcp = ip[ihl:total]
    if len(tcp) < 20:
        return None
    sport, dport = struct.unpack("!HH", tcp[:4])
    off = (tcp[12] >> 4) * 4
    return ip[12:16], ip[16:20], sport, dport, tcp[off:]


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    try:
        links = [parse_spec(s) for s in sys.argv[2:]]
    except ValueError:
        print("sniff.py: bad link spec", file=sys.stderr)
        return 2
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_ALL))
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    s.settimeout(0.2)
    tails = {}
    open(out + ".ready", "w").close()
    while not stop:
        try:
            frame, addr = s.recvfrom(262144)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        # Each packet once: what loopback sends is seen again as received.
        if addr[2] == socket.PACKET_OUTGOING and addr[0] == "lo":
            continue
        p = tcp_payload(frame)
        if not p or not p[4]:
            continue
        src, dst, sport, dport, data = p
        for link in links:
            if not watched(link, sport, dport):
                continue
            link["bytes"] += len(data)
            link["packets"] += 1
            key = (src, dst, sport, dport)
            seen = tails.get(key, b"") + data
            for m in link["markers"]:
                if m in seen:
                    link["seen"].add(m.decode())
            tails[key] = seen[-TAIL:]
    with open(out, "w") as f:
        json.dump({l["name"]: {"bytes": l["bytes"], "packets": l["packets"],
                               "seen": sorted(l["seen"])} for l in links},
                  f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
