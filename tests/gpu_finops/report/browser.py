"""Headless Debian Chromium through Selenium, the way the browser tests drive it: a fresh profile, no
background traffic, the performance log on (every network request it makes is read back from it)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars")  # fmt: skip
AXE_VERSION_VAR = "AXE_CORE_VERSION"


def binaries() -> tuple[str, str]:
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.fail("chromium and chromedriver are missing: `make setup` installs Debian's chromium and "
                    "chromium-driver (apt-get install chromium chromium-driver)", pytrace=False)  # fmt: skip
    return chromium, driver


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = binaries()
    with tempfile.TemporaryDirectory(prefix="gpu-finops-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = binary
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={profile}")
        options.add_argument(f"--window-size={width},{height}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def requests(driver) -> list[str]:
    """The URL of every request the page made (CDP Network.requestWillBeSent from the performance log)."""
    out = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            out.append(message["params"]["request"]["url"])
    return out


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def screenshot(driver, path: Path, width: int) -> Path:
    """The whole page at `width`, as tall as its content."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, height)
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(path))
    return path
