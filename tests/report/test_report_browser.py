"""The HTML report in a real browser: Debian's chromium, driven through its chromedriver by
Selenium, on a report of the tau-bench airline dev runs (examples/airline, real GPT-4o
conversations judged by the example's rules).

The page must render with no console error, show each finding at the call or turn where
it happened with the sentence it cites highlighted in that turn, and its filter by
verdict and by code (radio buttons and CSS, no script) must show exactly the runs that
match. ``scripts/install-browser.sh`` installs chromium and chromedriver (``make test``
runs it first); nothing is downloaded when the test runs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from tests.support.guards import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
AIRLINE = ROOT / "examples" / "airline"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1300,1000",
)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """The airline dev runs judged by ``tracejudge eval``: its HTML page and verdict lines."""
    out = tmp_path_factory.mktemp("airline")
    page, verdicts = out / "report.html", out / "verdicts.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracejudge",
            "eval",
            "--rules",
            str(AIRLINE / "rules.yaml"),
            "--html",
            str(page),
            "--output",
            str(verdicts),
            "-q",
            str(AIRLINE / "tau-bench-dev" / "gpt-4o-airline.dev.json"),
        ],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
    )
    assert proc.returncode == 1, proc.stderr  # some runs fail
    lines = [json.loads(line) for line in verdicts.read_text().splitlines()]
    return page, lines


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    """Headless chromium with a fresh profile and everything that calls out switched off."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: run `bash scripts/install-browser.sh` "
            "(as root; `make test` runs it)"
        )
    profile = tempfile.mkdtemp(prefix="tracejudge-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _visible_runs(driver: webdriver.Chrome) -> list[WebElement]:
    return [r for r in driver.find_elements(By.CSS_SELECTOR, ".runs .run") if r.is_displayed()]


def _ids(runs: list[WebElement]) -> set[str]:
    return {r.find_element(By.CSS_SELECTOR, ".row").get_attribute("id") or "" for r in runs}


def _run_id(line: dict[str, Any]) -> str:
    return f"run-{line['trace_id']}-{line['root_span_id']}"


def test_report_renders_with_findings_at_their_turn_and_a_working_filter(
    browser: webdriver.Chrome, report: tuple[Path, list[dict[str, Any]]]
) -> None:
    page, lines = report
    browser.get(page.as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    assert browser.find_element(By.TAG_NAME, "h1").text == "tracejudge report"
    assert len(browser.find_elements(By.CSS_SELECTOR, ".runs .run")) == len(lines) == 100

    # A finding on a tool call, citing the turn the user confirmed: shown right under the
    # call's card, and the sentence it quotes highlighted in that turn.
    line, finding = next(
        (v, f)
        for v in lines
        for f in v["findings"]
        if f["code"] == "F-POLICY-UNCONFIRMED_DETAILS" and "(turn " in f["explanation"]
    )
    turn = re.search(r"\(turn (\d+)\)", finding["explanation"])
    assert turn is not None
    tool = finding["explanation"].split()[0]
    run = browser.find_element(By.ID, _run_id(line))
    shown = [
        f
        for f in run.find_elements(By.CSS_SELECTOR, ".finding")
        if f.find_element(By.CSS_SELECTOR, "div").text == finding["explanation"]
    ]
    assert shown, "the finding is not in its run's conversation"
    card = shown[0].find_element(By.XPATH, "preceding-sibling::div[1]")
    assert "call" in (card.get_attribute("class") or "")
    assert card.text.startswith(f"tool call {tool} ·")
    assert shown[0].is_displayed()
    cites = shown[0].find_element(By.LINK_TEXT, f"cites turn {turn.group(1)}")
    target = (cites.get_attribute("href") or "").split("#", 1)[1]
    cited = browser.find_element(By.ID, target)
    assert cited.find_element(By.CSS_SELECTOR, ".who").text.startswith(f"turn {turn.group(1)}")
    mark = cited.find_element(By.CSS_SELECTOR, "mark.cite").text
    assert len(mark) > 10
    assert mark in finding["explanation"]

    # The filter: by verdict, by code, and both at once.
    by_verdict = {v: {_run_id(x) for x in lines if x["verdict"] == v} for v in ("pass", "fail")}
    browser.find_element(By.CSS_SELECTOR, "label[for=fv-pass]").click()
    assert _ids(_visible_runs(browser)) == by_verdict["pass"]
    browser.find_element(By.CSS_SELECTOR, "label[for=fv-fail]").click()
    assert _ids(_visible_runs(browser)) == by_verdict["fail"]
    label = next(
        x
        for x in browser.find_elements(By.CSS_SELECTOR, ".filters label")
        if x.text.startswith(finding["code"] + " (")
    )
    label.click()
    with_code = {
        _run_id(x) for x in lines if any(f["code"] == finding["code"] for f in x["findings"])
    }
    assert _ids(_visible_runs(browser)) == with_code & by_verdict["fail"]
    assert int(label.text.rsplit("(", 1)[1].rstrip(")")) == len(with_code)
    browser.find_element(By.CSS_SELECTOR, "label[for=fv-all]").click()
    assert _ids(_visible_runs(browser)) == with_code
    browser.find_element(By.CSS_SELECTOR, "label[for=fc-all]").click()
    assert len(_visible_runs(browser)) == 100

    # A timeline box links to its step in the conversation.
    box = run.find_element(By.CSS_SELECTOR, "svg a")
    href = box.get_dom_attribute("href") or ""
    assert browser.find_element(By.ID, href.split("#", 1)[1]).is_displayed()

    log: list[dict[str, Any]] = browser.get_log("browser")  # type: ignore[no-untyped-call]
    errors = [e for e in log if e["level"] == "SEVERE"]
    assert errors == []
