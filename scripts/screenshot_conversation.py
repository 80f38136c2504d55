"""Photograph a report's run view with its conversation: docs/img/report-conversation.png.

    .venv/bin/python scripts/screenshot_conversation.py REPORT.html OUT.png

``scripts/screenshots.sh`` runs it on the HTML report of the tau-bench airline dev runs
(examples/airline). In headless chromium (Debian's, through its chromedriver; see
scripts/install-browser.sh) it clicks the filter for the code of the first finding that
sits under a tool call and cites a turn, then leaves out of the picture everything but the
filter and that run: of its conversation, the turns from just before the cited one to the
finding. Nothing is redrawn: the page's own markup and CSS, parts hidden.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=2",
    "--window-size=1000,800",
)

KEEP = """
const [finding] = arguments;
const run = finding.closest('.run');
const conv = finding.closest('.conv');
const cited = document.getElementById(finding.querySelector('a').hash.slice(1));
document.querySelectorAll('body > *').forEach(e => {
  if (!e.contains(run) && !e.classList.contains('filters')) e.style.display = 'none';
});
document.querySelectorAll('.runs > .run').forEach(r => {
  if (r !== run) r.style.display = 'none';
});
document.querySelectorAll('.legend').forEach(e => { e.style.display = 'none'; });
let keep = false;
const start = cited.previousElementSibling || cited;
for (const item of conv.children) {
  if (item.tagName === 'SUMMARY') continue;
  if (item === start) keep = true;
  if (!keep) item.style.display = 'none';
  if (item === finding) keep = false;
}
document.querySelectorAll('.call pre').forEach(p => { p.style.maxHeight = '90px'; });
document.body.style.margin = '12px';
document.body.style.maxWidth = '960px';
return Math.ceil(document.documentElement.scrollHeight);
"""


def main(report: Path, out: Path) -> int:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    with tempfile.TemporaryDirectory(prefix="tracejudge-chromium-") as profile:
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            driver.get(report.resolve().as_uri())
            findings = driver.find_elements(By.CSS_SELECTOR, ".call + .finding")
            finding = next(
                (f for f in findings if f.find_elements(By.PARTIAL_LINK_TEXT, "cites turn")),
                None,
            )
            if finding is None:
                print(f"{report}: no finding under a tool call that cites a turn", file=sys.stderr)
                return 2
            code = finding.find_element(By.TAG_NAME, "code").text
            label = next(
                x
                for x in driver.find_elements(By.CSS_SELECTOR, ".filters label")
                if x.text.startswith(code + " (")
            )
            label.click()
            driver.find_element(By.CSS_SELECTOR, "label[for=fv-fail]").click()
            height = int(driver.execute_script(KEEP, finding))
            driver.set_window_size(1000, height + 140)  # the window's frame takes some
            driver.execute_script("window.scrollTo(0, 0)")
            driver.save_screenshot(str(out))
        finally:
            driver.quit()
    print(f"{out}  {out.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
