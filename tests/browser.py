"""Open a page in headless Chromium and inspect it, for the end-to-end report test.

Chromium is driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``: commands
on file descriptor 3, replies on 4, JSON messages ending in NUL), so no WebDriver or websocket
package is needed. The browser runs with a fresh profile, no sandbox (CI runs as root), no GPU and
no network services.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
         "--disable-dev-shm-usage", "--remote-debugging-pipe"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Chromium:
    """``with Chromium() as c: c.open(path); c.eval("document.title")``."""

    def __init__(self, binary: str | None = None, timeout: float = 60.0):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise FileNotFoundError("chromium is not installed (Debian: apt-get install chromium)")
        self.timeout = timeout
        self._id = 0
        self.session = None
        self.events: list[dict] = []

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="aqmlab-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the browser reads commands on fd 3 and writes replies on fd 4
        def child_fds():
            # via fresh copies: a pipe may already be fd 3 or 4, and dup2 onto itself would leave it
            # close-on-exec
            r, w = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen([self.binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=child_fds, close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        return self

    def __exit__(self, *exc):
        try:
            self.send("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.stderr else ""
                    raise RuntimeError(f"chromium exited: {err}")
                self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: bool = True) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def open(self, path: Path) -> None:
        """Open a local file in a new tab and wait until it and its images have loaded."""
        url = Path(path).resolve().as_uri()
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.send("Runtime.enable")
        self.send("Log.enable")
        self.send("Page.enable")
        self.send("Page.navigate", {"url": url})
        deadline = time.monotonic() + self.timeout
        while self.eval("document.readyState") != "complete" or not self.eval(
                "Array.from(document.images).every(i => i.complete)"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading")
            time.sleep(0.1)

    def eval(self, expression: str):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def errors(self) -> list[str]:
        """Exceptions and error-level console/log entries seen so far."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(str(p.get("exceptionDetails", {}).get("text")))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"{p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append(str(p.get("args")))
        return out


PAGE_CHECK = """(() => {
  const imgs = Array.from(document.images).map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0,
                                                     w: i.naturalWidth, h: i.naturalHeight}));
  const links = Array.from(document.querySelectorAll('a[href]')).map(a => {
    const href = a.getAttribute('href');
    const id = href.startsWith('#') ? decodeURIComponent(href.slice(1)) : null;
    return {href, text: a.textContent.trim().slice(0, 60), anchor: id === null ? null : (id === '' || !!document.getElementById(id))};
  });
  return {title: document.title, imgs, links, ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
          h1: Array.from(document.querySelectorAll('h1')).map(h => h.textContent.trim())};
})()"""


def inspect_page(path: Path, binary: str | None = None) -> dict:
    """Load ``path`` in Chromium; returns title, images (loaded or not), links (anchors resolved),
    element ids, h1 texts and the page's errors."""
    with Chromium(binary) as c:
        c.open(path)
        info = c.eval(PAGE_CHECK)
        info["errors"] = c.errors()
    return info
