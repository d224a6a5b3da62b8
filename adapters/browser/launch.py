"""Start a headless Chromium that reaches nothing by itself, and make sure it ends with us.

Every request a page makes is meant to reach g6 through the DevTools Fetch domain (``render``); the
launch makes whatever is *not* intercepted die:

* ``--proxy-server`` points at a port g6 holds bound on 127.0.0.1 and never listens on, so a connection
  to it is refused at once, and no other program can take the port while the browser runs;
  ``--proxy-bypass-list=<-loopback>`` sends loopback through that proxy too (Chromium otherwise goes
  around a proxy for 127.0.0.1 and localhost);
* ``--host-resolver-rules`` answers every name with "not found", so not even a DNS query leaves;
* no QUIC; WebRTC may use only proxied TCP (so no UDP at all: STUN, host candidates);
* every background service off (updates, sync, safe browsing, translation, metrics, pings, the
  domain reliability monitor, component updates), as the tests' headless browser has it;
* a fresh profile in a new temporary folder, removed on close; each capture also runs in a browser
  context of its own (``render``), disposed after it: no cookie or storage passes between captures.

The child gets ``PR_SET_PDEATHSIG`` (SIGKILL when the thread that started it ends: the pool starts
browsers from one long-lived thread), a process group of its own (ended as a group on close) and the
environment variable ``G6_BROWSER_OWNER`` (this process and a token), which every Chromium process
inherits, so a test can find any that outlived its command. Its DevTools pipe is moved onto its fd 3 and 4
in the child itself, so the start depends on no descriptor of this process (``_spawn``).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from g6.adapters.browser.cdp import BrowserError, CDPConnection
from g6.adapters.browser.persona import persona_flags
from g6.errors import ProgramMissing

OWNER_ENV = "G6_BROWSER_OWNER"
EXECUTABLES = ("chromium", "chromium-browser", "google-chrome")
PR_SET_PDEATHSIG = 1

# The tests' headless browser (tests/headless.py) and the services a plain start would use. Each of Chromium's
# own requests seen at a recorder in place of the dead proxy (tests/attack/test_browser_attacks.py) is turned off
# here or in ``PREFERENCES``: the network time (NetworkTimeServiceQuerying), FedCM (its fetches are the browser's
# own, outside the DevTools Fetch domain), the speculative preconnects and prefetches of the browser itself.
# The WebUI omnibox popups: Chromium 156 loads two of them (chrome://omnibox-popup.top-chrome/, one its "AI mode"
# page) in a renderer of their own for every browser context, so for every capture, headless or not. That was
# about 0.55 s of a core a capture, more than half of all the browser's CPU for a small page (bench/render.py);
# a headless browser has no omnibox to show them in.
QUIET_FEATURES = ("Translate", "OptimizationHints", "MediaRouter", "DialMediaRouteProvider",
                  "AutofillServerCommunication", "CertificateTransparencyComponentUpdater",
                  "InterestFeedContentSuggestions", "NetworkTimeServiceQuerying", "FedCm",
                  "WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "WebUIOmniboxFullPopup")
QUIET_FLAGS = (
    "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--mute-audio",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
    "--disable-default-apps", "--disable-breakpad", "--disable-domain-reliability",
    "--disable-client-side-phishing-detection", "--metrics-recording-only", "--no-pings",
    f"--disable-features={','.join(QUIET_FEATURES)}",
    "--deny-permission-prompts", "--hide-scrollbars", "--disable-dev-shm-usage",
    # Chromium 156 checks the Google accounts of every profile once its network is up (ListAccounts), and no
    # flag or setting stops it: its accounts service is pointed at a port Chromium refuses to use
    # (ERR_UNSAFE_PORT), so the check fails inside the browser and opens no connection, not even to the proxy
    "--gaia-url=https://gaia.invalid:1/",
)
# What makes anything not intercepted die (the proxy itself is added per launch: its port is ours).
LOCKDOWN_FLAGS = (
    "--proxy-bypass-list=<-loopback>", "--disable-quic",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)


# The profile's own settings, written before the start (a fresh profile is read from them): what no flag turns
# off. ``net.network_prediction_options`` 2 is "never predict": no preconnect or prefetch of the browser's own
# (it preconnects to a page's https origin as it navigates, beside the request g6 answers).
PREFERENCES: dict[str, Any] = {"net": {"network_prediction_options": 2}}
NO_MODELS = "g6-no-models.json"


def _write_profile(profile: str) -> list[str]:
    """Write the profile's settings; the flags that name files in it. The on-device AI models' manifest is
    otherwise asked of Google's update service at every start (``--disable-component-update`` does not stop it):
    ``--optimization-guide-manifest-override`` names an empty local manifest instead."""
    default = os.path.join(profile, "Default")
    os.makedirs(default, exist_ok=True)
    with open(os.path.join(default, "Preferences"), "w", encoding="utf-8") as f:
        json.dump(PREFERENCES, f)
    with open(os.path.join(profile, NO_MODELS), "w", encoding="utf-8") as f:
        json.dump({"components": {}}, f)
    return [f"--optimization-guide-manifest-override={os.path.join(profile, NO_MODELS)}"]


class BrowserUnavailable(BrowserError, ProgramMissing):
    """No Chromium to start, or it would not start (``G6_E_OUTSIDE_PROGRAM_MISSING``: a failed check, exit 1)."""


# Debian's /usr/bin/chromium is a shell script that adds flags and exports Google API keys before starting
# this binary: g6 starts the binary itself, with its own flags only.
WRAPPED = {"/usr/bin/chromium": "/usr/lib/chromium/chromium",
           "/usr/bin/chromium-browser": "/usr/lib/chromium-browser/chromium-browser"}


def find_chromium(configured: str | None = None) -> str:
    """The browser to start: ``configured`` (a path or a name on PATH), else the first of EXECUTABLES; a
    distribution's launcher script is skipped for the binary it starts (``WRAPPED``)."""
    for name in ((configured,) if configured else EXECUTABLES):
        path = shutil.which(name)
        if path:
            real = WRAPPED.get(os.path.realpath(path)) or WRAPPED.get(path)
            return real if real and os.access(real, os.X_OK) else path
    wanted = configured or " or ".join(EXECUTABLES)
    raise BrowserUnavailable(f"no Chromium to render with: {wanted} is not installed or not on PATH "
                             "(Debian: apt-get install chromium; or set G6_CHROMIUM to its path)")


def _pdeathsig() -> None:
    with contextlib.suppress(Exception):  # not Linux: the pipe closing and the group kill remain
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


PIPE_IN, PIPE_OUT = 3, 4  # where --remote-debugging-pipe reads commands and writes replies, in the child


def _close_inherited(low: int) -> None:
    """In the child: close every descriptor from ``low`` up that would survive exec (what ``close_fds`` does);
    close-on-exec ones are left to exec, among them subprocess's own error pipe, which reports a failed exec."""
    try:
        fds: Iterable[int] = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every number up to the limit (bounded: a limit can be in the millions)
        fds = range(low, min(os.sysconf("SC_OPEN_MAX"), 65536))
    for fd in fds:
        if fd >= low:
            with contextlib.suppress(OSError):
                if not fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC:
                    os.close(fd)


def _hold_pipe_numbers() -> list[int]:
    """Take 3 and 4 in this process while they are free (until the child is started): subprocess's error pipe,
    made at the lowest free numbers, then cannot be 3 or 4, where the child moves its DevTools pipe ends."""
    held: list[int] = []
    while True:
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        if fd > PIPE_OUT:
            os.close(fd)
            return held
        held.append(fd)


def _spawn(argv: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int, int]:
    """Start ``argv`` with a new pipe pair on its fd 3 (commands in) and 4 (replies out), in a session of its own;
    the process and g6's ends (to write, to read).

    Nothing is assumed of this process's own descriptors: ``pass_fds=(3, 4)`` would make subprocess touch 3 and 4
    here, which fails with EBADF when either is not open (a thread blocked in ``accept()`` holds a number that is
    not open). The child's ends are made at 10 and up (so moving one onto 3 or 4 cannot overwrite the other),
    close-on-exec; the child moves them onto 3 and 4 (``dup2`` clears close-on-exec there) and closes whatever
    else it would inherit, as ``close_fds`` does (which cannot be used: it would close 3 and 4 after the move)."""
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    try:
        c_in = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10)
        c_out = fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
    except OSError:
        for fd in (to_r, to_w, from_r, from_w):
            os.close(fd)
        raise
    for fd in (to_r, from_w):
        os.close(fd)
    for fd in (to_w, from_r):
        fcntl.fcntl(fd, fcntl.F_SETFD, fcntl.FD_CLOEXEC)  # never inherited by anything else we start

    def child_setup() -> None:
        _pdeathsig()
        os.dup2(c_in, PIPE_IN)
        os.dup2(c_out, PIPE_OUT)
        _close_inherited(PIPE_OUT + 1)

    held = _hold_pipe_numbers()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env, close_fds=False, preexec_fn=child_setup,
                                start_new_session=True)
    except BaseException:
        for fd in (to_w, from_r):
            os.close(fd)
        raise
    finally:
        for fd in (*held, c_in, c_out):
            with contextlib.suppress(OSError):
                os.close(fd)
    return proc, to_w, from_r


@dataclass(frozen=True, slots=True)
class BrowserInfo:
    product: str  # "Chrome/156.0.8078.114"
    user_agent: str
    protocol: str

    def to_json(self) -> dict[str, Any]:
        return {"name": "chromium", "version": self.product.split("/", 1)[-1], "product": self.product,
                "user_agent": self.user_agent, "protocol": self.protocol}


class BrowserProcess:
    """One Chromium, locked down, driven over a pipe. ``extra_flags`` are for tests only (a test that
    makes an attack possible, to show the lockdown still holds)."""

    def __init__(self, executable: str, *, extra_flags: tuple[str, ...] = (), start_timeout: float = 30.0) -> None:
        self.executable = executable
        self.owner = f"{os.getpid()}-{secrets.token_hex(6)}"
        # the dead proxy: bound (so no one else can listen there) and never listening (so it refuses)
        self._dead = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._dead.bind(("127.0.0.1", 0))
        self.proxy_port = int(self._dead.getsockname()[1])
        self._profile = ""
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env[OWNER_ENV] = self.owner
        try:
            self._profile = tempfile.mkdtemp(prefix="g6-render-")
            flags = [*QUIET_FLAGS, *persona_flags(executable), *_write_profile(self._profile), *LOCKDOWN_FLAGS,
                     f"--proxy-server=http://127.0.0.1:{self.proxy_port}"]
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                flags.append("--no-sandbox")  # Chromium will not start as root with its sandbox
            argv = [executable, *flags, *extra_flags, f"--user-data-dir={self._profile}", "--remote-debugging-pipe",
                    "about:blank"]
            self.proc, to_w, from_r = _spawn(argv, env)
        except (OSError, subprocess.SubprocessError) as e:
            self._cleanup()
            raise BrowserUnavailable(f"{executable} would not start: {e}") from None
        self.cdp = CDPConnection(to_w, from_r)
        try:
            v = self.cdp.send("Browser.getVersion", timeout=start_timeout)
        except BrowserError as e:
            self.close()
            raise BrowserUnavailable(f"{executable} started but did not answer on its DevTools pipe: {e}") from None
        self.info = BrowserInfo(str(v.get("product", "")), str(v.get("userAgent", "")),
                                str(v.get("protocolVersion", "")))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None and self.cdp.closed is None

    def close(self, grace: float = 3.0) -> None:
        """Ask the browser to close, then end its whole process group, then remove its profile."""
        if self.proc.poll() is None and self.cdp.closed is None:
            with contextlib.suppress(BrowserError):
                self.cdp.post("Browser.close")
        self.cdp.close(wait=0)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        self.cdp.join_reader(grace)
        self._cleanup()

    def kill(self) -> None:
        """End every process of the browser's group at once (a hung browser, a close that did not end it)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(10)

    def _cleanup(self) -> None:
        with contextlib.suppress(OSError):
            self._dead.close()
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
