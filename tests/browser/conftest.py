"""Browser tests need Chromium (Debian's `chromium` package) and Playwright for Python (the `browser`
extra). Chromium is installed here when missing (apt-get, as root or through sudo); set
EVENTTIME_SKIP_BROWSER=1 to skip these tests instead, with the reason shown."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

SKIP_ENV = "EVENTTIME_SKIP_BROWSER"
INSTALL = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]


def _unavailable(why: str) -> None:
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{why} ({SKIP_ENV}=1)")
    pytest.fail(f"{why}. Set {SKIP_ENV}=1 to skip the browser tests.", pytrace=False)


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _install_chromium() -> str:
    """apt-get install chromium (as root, or with sudo -n); what went wrong if it cannot."""
    prefix = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
    if prefix is None:
        return "not root and no sudo"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    out = ""
    for cmd in (prefix + INSTALL, prefix + ["apt-get", "update"], prefix + INSTALL):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(cmd)}: {exc}"
        out = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        out = out[0]
        if proc.returncode == 0 and cmd[-1] == "chromium" and _find_chromium():
            return ""
    return out


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = _find_chromium()
    if path is None:
        if os.environ.get(SKIP_ENV) == "1":
            pytest.skip(f"Chromium is not installed ({SKIP_ENV}=1)")
        problem = _install_chromium()
        path = _find_chromium()
        if path is None:
            _unavailable(f"Chromium is not installed and `{' '.join(INSTALL)}` failed: {problem}")
    return path


@pytest.fixture(scope="session")
def browser(chromium_path):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright for Python is not installed: pip install -e '.[browser]'")
    with sync_playwright() as pw:
        # The system Chromium, not a browser Playwright downloads. Chromium refuses to run as root
        # without --no-sandbox (containers, CI).
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        b = pw.chromium.launch(executable_path=chromium_path, headless=True, args=args)
        yield b
        b.close()
