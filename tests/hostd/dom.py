"""The dashboard's tests' view of Chromium (tests/hostd/dashboard.sh,
dashboard-hostd.sh): a small DOM of a page it dumped (--dump-dom), and a
headless browser driven over the DevTools protocol."""
import base64
import fcntl
import html.parser
import json
import os
import re
import select
import subprocess
import time


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children = []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text()
                       for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()

    def find_all(self, pred):
        return [n for n in self.walk() if pred(n)]

    def by_id(self, ident):
        found = self.find_all(lambda n: n.attrs.get("id") == ident)
        return found[0] if found else None

    def classes(self):
        return (self.attrs.get("class") or "").split()


class TreeBuilder(html.parser.HTMLParser):
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input",
            "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", [], None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in self.VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def load(folder, name):
    """FOLDER/NAME.html as (its text, its DOM)."""
    with open(os.path.join(folder, name + ".html"), encoding="utf-8") as f:
        raw = f.read()
    b = TreeBuilder()
    b.feed(raw)
    b.close()
    return raw, b.root


def console_errors(folder, name):
    """The page's console messages in FOLDER/NAME.log that are errors or
    policy violations."""
    bad = []
    with open(os.path.join(folder, name + ".log"), encoding="utf-8",
              errors="replace") as f:
        for line in f:
            if "CONSOLE" in line and re.search(
                    r"Uncaught|Refused|TrustedHTML|TrustedScript|"
                    r"Content Security Policy|Error", line):
                bad.append(line.strip())
    return bad


class Browser:
    """Headless Chromium driven over --remote-debugging-pipe (fds 3, 4):
    JSON messages separated by NUL bytes."""

    def __init__(self, chrome, profile, log, size="1400,1000"):
        to_r, self.to_chrome = os.pipe()
        self.from_chrome, from_w = os.pipe()
        hi_r = fcntl.fcntl(to_r, fcntl.F_DUPFD, 100)
        hi_w = fcntl.fcntl(from_w, fcntl.F_DUPFD, 100)

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen(
            [chrome, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--disable-extensions",
             "--disable-dev-shm-usage", "--remote-debugging-pipe",
             "--user-data-dir=" + profile, "--hide-scrollbars",
             "--window-size=" + size, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
            pass_fds=(3, 4), preexec_fn=child_fds)
        for fd in (to_r, from_w, hi_r, hi_w):
            os.close(fd)
        self.buf = b""
        self.next_id = 0
        self.session = None
        self.errors = []

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            if select.select([self.from_chrome], [], [], left)[0]:
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed its pipe")
                self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def _event(self, m):
        method, p = m.get("method"), m.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.errors.append(json.dumps(p.get("exceptionDetails"))[:400])
        elif method == "Runtime.consoleAPICalled" and p.get("type") in (
                "error", "assert"):
            self.errors.append(json.dumps(p.get("args"))[:400])
        elif method == "Log.entryAdded":
            e = p.get("entry", {})
            if e.get("level") == "error" and not str(
                    e.get("url", "")).endswith("/favicon.ico"):
                self.errors.append(e.get("text", "")[:400])

    def send(self, method, params=None, session=True, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self._event(m)

    def open(self, url):
        t = self.send("Target.createTarget", {"url": "about:blank"}, False)
        self.session = self.send("Target.attachToTarget", {
            "targetId": t["targetId"], "flatten": True}, False)["sessionId"]
        self.send("Runtime.enable")
        self.send("Log.enable")
        self.send("Page.navigate", {"url": url})

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr,
                                           "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError("evaluating: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def close(self):
        try:
            self.send("Browser.close", session=False, timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def screenshot(self, path, selector=None, height=None):
        """Saves a PNG of the element SELECTOR (the whole page when None,
        at most HEIGHT px of it when given) into PATH."""
        r = self.eval("""(() => {
            const e = %s;
            const r = e.getBoundingClientRect();
            return {x: r.left + scrollX, y: r.top + scrollY,
                    w: Math.max(r.width, document.documentElement.clientWidth),
                    h: %s};
        })()""" % ("document.querySelector(%s)" % json.dumps(selector)
                   if selector else "document.documentElement",
                   "r.height" if selector or height is None
                   else "Math.min(r.height, %d)" % height))
        shot = self.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": r["x"], "y": r["y"], "width": r["w"],
                     "height": r["h"], "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
