"""Opens plan explorer pages (`ttnn-analyzer report --html`) in headless Chromium and fails on
any console error, uncaught exception or missing element; optionally saves a screenshot.

Talks to Chromium over the DevTools protocol on `--remote-debugging-pipe` (NUL-separated JSON
on file descriptors 3 and 4), standard library only. One browser serves every page.

    python3 check.py [--screenshot PAGE.html=OUT.png] [--max-ready-ms 2000] PAGE.html...

Prints one line per page (ops, time to interactive) and exits 1 if any page fails.
"""

import argparse
import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


class Browser:
    """A headless Chromium driven over its DevTools pipe."""

    def __init__(self, binary: str, width: int, height: int):
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()
        # The child's ends above 4, so moving them to 3 and 4 cannot close one of them.
        to_child_r, from_child_w = (self._above_4(fd) for fd in (to_child_r, from_child_w))

        # The pipe protocol's fixed descriptors are 3 (commands in) and 4 (replies out); the
        # shell (bash: dash takes one-digit descriptors only) moves the pipe ends there, whatever numbers they have here.
        move = f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w} {to_child_r}<&- {from_child_w}>&-'
        self.proc = subprocess.Popen(
            [
                "bash",
                "-c",
                move,
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-pipe",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(os.environ.get("EXPLORER_CHROMIUM_LOG", os.devnull), "w"),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        self.width, self.height = width, height
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    @staticmethod
    def _above_4(fd: int) -> int:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return high

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no reply from Chromium")
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: bool = False, timeout: float = 30.0, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            e = self._read(deadline)
            if e.get("method") == method:
                return e
            self.events.append(e)

    def evaluate(self, expression: str):
        r = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluating {expression!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def console_errors(events: list[dict]) -> list[str]:
    """Errors among the DevTools events: exceptions, console.error/assert, error log entries."""
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            out.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
            out.append("log: " + p["entry"].get("text", ""))
    return out


# What the page must show once loaded; each is a JavaScript expression that must be true.
CHECKS = {
    "every op is a node": "document.querySelectorAll('#graph .node').length === JSON.parse(document.getElementById('data').textContent).nodes.length",
    "there are ops": "document.querySelectorAll('#graph .node').length > 0",
    "nodes are coloured by placement": "document.querySelectorAll('#graph .node.l1s, #graph .node.l1i, #graph .node.dram').length > 0",
    # The configurations are the IR as written and every policy: as many as the page's data
    # lists, and at least the written IR and two policies.
    "there are configurations to compare": "JSON.parse(document.getElementById('data').textContent).configs.length >= 3",
    "one summary row per configuration": "document.querySelectorAll('#sumtable tr[data-i]').length === JSON.parse(document.getElementById('data').textContent).configs.length",
    "one button per configuration": "document.querySelectorAll('#configs button').length === JSON.parse(document.getElementById('data').textContent).configs.length",
    "the timeline is drawn": "document.querySelector('#tl path') !== null",
    "the search box is there": "document.getElementById('search') !== null",
}

# Interaction: search for the first node's name, which selects it and fills the detail panel.
INTERACT = """(() => {
  const d = JSON.parse(document.getElementById('data').textContent);
  const s = document.getElementById('search');
  s.value = d.nodes[0].n; s.dispatchEvent(new Event('input'));
  const hit = document.querySelector('#graph .node.sel');
  const detail = document.querySelector('#detail h3');
  document.querySelectorAll('#configs button')[0].click();
  return !!hit && !!detail && detail.textContent === d.nodes[0].n && document.querySelectorAll('#detail li').length === d.configs.length;
})()"""


SCREENSHOT_STATE = """(() => {
  const s = document.getElementById('search');
  s.value = ''; s.dispatchEvent(new Event('input'));
  document.querySelectorAll('#configs button')[2].click();
  const g = document.querySelector('#graph .node.rs') || document.querySelector('#graph .node');
  g.querySelector('rect').dispatchEvent(new MouseEvent('click', { bubbles: true }));
  g.scrollIntoView({ block: 'center', inline: 'center' });
  window.scrollTo(0, 0);
  return true;
})()"""


def check_page(b: Browser, page: Path, max_ready_ms: float, screenshot: Path | None) -> list[str]:
    b.events.clear()
    b.call("Page.navigate", session=True, url=page.resolve().as_uri())
    b.wait_for("Page.loadEventFired")
    failures = []
    ready = b.evaluate("document.body.dataset.ready")
    if ready is None:
        failures.append("the page never became interactive (no data-ready)")
    elif float(ready) > max_ready_ms:
        failures.append(f"interactive after {ready} ms, over {max_ready_ms:.0f} ms")
    for what, expr in CHECKS.items():
        if b.evaluate(expr) is not True:
            failures.append(f"check failed: {what}")
    if b.evaluate(INTERACT) is not True:
        failures.append("check failed: searching a loc name selects the op and shows it under every configuration")
    if screenshot is not None:
        # The merge policy, with the first op that gets a reshard selected and in view.
        b.evaluate(SCREENSHOT_STATE)
        png = b.call("Page.captureScreenshot", session=True, format="png")["data"]
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(base64.b64decode(png))
    failures += console_errors(b.events)
    nodes = b.evaluate("document.querySelectorAll('#graph .node').length")
    script = b.evaluate("document.body.dataset.script")
    status = "ok" if not failures else "FAILED"
    print(f"{status} {page.name}: {nodes} ops, interactive after {ready} ms ({script} ms of it the page's script)")
    for f in failures:
        print(f"  {f}")
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="+", type=Path)
    ap.add_argument("--screenshot", action="append", default=[], help="PAGE.html=OUT.png")
    ap.add_argument("--max-ready-ms", type=float, default=2000.0)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = ap.parse_args()
    shots = {Path(k).resolve(): Path(v) for k, v in (s.split("=", 1) for s in args.screenshot)}
    b = Browser(args.chromium, 1400, 900)
    failed = 0
    try:
        for page in args.pages:
            if check_page(b, page, args.max_ready_ms, shots.get(page.resolve())):
                failed += 1
    finally:
        b.close()
    print(f"{len(args.pages) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
