"""The HTML report in a real browser: headless Debian chromium driven by selenium.

`desync report` renders two committed scenarios; the page must show the verdict, one lane per
rank in every process group, the earliest mismatch (or the stuck collective) marked, details on
hover and click, and log nothing to the console. A screenshot of each is kept under pytest's
tmp dir as an artifact for a person to look at.

chromium comes from `scripts/install-chromium.sh` (apt-get); when it cannot be installed the
test fails rather than skips: an unchecked report is how broken reports ship.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import REPO, SCENARIO_DIR, desync_bin, synth_bin

pytestmark = pytest.mark.desync

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--no-first-run",
    "--window-size=1400,1800",
]


@pytest.fixture(scope="module")
def browser_paths() -> tuple[str, str]:
    proc = subprocess.run(["bash", str(REPO / "scripts" / "install-chromium.sh")],
                          capture_output=True, text=True, timeout=1200, check=False)
    assert proc.returncode == 0, f"chromium could not be installed:\n{proc.stdout}\n{proc.stderr}"
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "install-chromium.sh succeeded but chromium/chromedriver are not on PATH"
    return chromium, driver


@pytest.fixture
def driver(browser_paths, tmp_path):
    chromium, chromedriver = browser_paths
    options = Options()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: selenium-manager would otherwise try to download one.
    d = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    yield d
    d.quit()


def render(name: str, out: Path) -> tuple[Path, dict]:
    """`desync report` (HTML) and `desync analyze --format json` on one scenario."""
    exe = desync_bin()
    assert exe.exists(), f"desync binary not found at {exe} (build it or set DESYNC_BIN)"
    scenario = SCENARIO_DIR / name
    html = out / f"{name}.html"
    args = [str(scenario / "dumps"), "--source-root", str(scenario / "src")]
    proc = subprocess.run([str(exe), "report", *args, "-o", str(html)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, f"desync report exited {proc.returncode}: {proc.stderr}"
    proc = subprocess.run([str(exe), "analyze", *args, "--format", "json"],
                          capture_output=True, text=True, timeout=120, check=False)
    return html, json.loads(proc.stdout)


def drawn_groups(d) -> list:
    """Every open process group's section, each scrolled into view until its lanes are drawn."""
    # Closed groups (agreeing, not involved) draw when opened; the open ones must draw.
    sections = d.find_elements(By.CSS_SELECTOR, "#pgs details.pg[open]")
    for s in sections:
        d.execute_script("arguments[0].scrollIntoView()", s)
        WebDriverWait(d, 10).until(lambda _: s.find_elements(By.CSS_SELECTOR, "svg.cells"))
    d.execute_script("window.scrollTo(0, 0)")
    return sections


def lanes_of(section) -> list[str]:
    return [t.get_attribute("data-ranks") for t in section.find_elements(By.CSS_SELECTOR, "text.lane-label")]


def progress_is_ordered(section) -> bool:
    """Lanes run from the rank that fell furthest behind to the furthest ahead."""
    progress = [int(t.get_attribute("data-progress"))
                for t in section.find_elements(By.CSS_SELECTOR, "text.lane-label")]
    return progress == sorted(progress)


def expand(ranks: str) -> list[str]:
    out: list[str] = []
    for part in ranks.split(","):
        lo, _, hi = part.partition("-")
        out += [str(r) for r in range(int(lo), int(hi or lo) + 1)]
    return out


def assert_clean_console(d) -> None:
    errors = [e for e in d.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, f"console errors: {errors}"


def test_early_stop_report_in_browser(driver, tmp_path):
    html, report = render("early_stop", tmp_path)
    driver.get(html.as_uri())
    verdict = driver.find_element(By.ID, "verdict")
    assert "DIVERGENCE" in verdict.text
    assert driver.find_element(By.ID, "headline").text == report["verdict"]["headline"]
    assert driver.find_element(By.ID, "culprits").text == "3"

    (section,) = drawn_groups(driver)
    assert lanes_of(section) == ["0", "1", "2", "3"], "one lane per rank"
    culprit = section.find_elements(By.CSS_SELECTOR, "text.lane-label.culprit")
    assert [c.get_attribute("data-ranks") for c in culprit] == ["3"], "the departed rank is highlighted"
    label = section.find_element(By.CSS_SELECTOR, "text.mlabel.earliest")
    assert "earliest mismatch (seq 55)" in label.text
    assert section.find_elements(By.CSS_SELECTOR, "rect.band.earliest")
    hot = section.find_elements(By.CSS_SELECTOR, "rect.cell.hot")
    assert len(hot) == 1, "rank 3's collective at the mismatch is outlined"

    # Hover shows what rank 3 issued at seq 55; a click pins it with its stack.
    ActionChains(driver).move_to_element(hot[0]).perform()
    tip = driver.find_element(By.ID, "tip")
    WebDriverWait(driver, 5).until(lambda _: tip.is_displayed())
    assert "seq 55" in tip.text and "all_reduce" in tip.text and "[[3]]" in tip.text, tip.text
    ActionChains(driver).click(hot[0]).perform()
    detail = driver.find_element(By.ID, "detail")
    WebDriverWait(driver, 5).until(lambda _: detail.is_displayed())
    assert "train.py:105" in detail.text, detail.text

    marked = driver.find_element(By.ID, "marked-line")
    assert "101" in marked.text and "break" in marked.text
    assert driver.find_element(By.ID, "probe-consensus").is_displayed()

    driver.execute_script("window.scrollTo(0, 0)")
    shot = tmp_path / "early_stop.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
    assert_clean_console(driver)


def test_pg_order_report_in_browser(driver, tmp_path):
    html, report = render("pg_order", tmp_path)
    driver.get(html.as_uri())
    assert "DEADLOCK" in driver.find_element(By.ID, "verdict").text
    assert driver.find_element(By.ID, "headline").text == report["verdict"]["headline"]

    sections = drawn_groups(driver)
    members = {pg["name"]: pg["members"] for pg in report["process_groups"]}
    assert len(sections) == len(members) == 5
    for s in sections:
        name = s.get_attribute("data-name")
        lanes = lanes_of(s)
        assert sorted(lanes, key=int) == [str(r) for r in members[name]], f"one lane per member of pg {name}"
        assert progress_is_ordered(s), f"lanes of pg {name} are ordered by progress"
    stuck = [label.text for s in sections for label in s.find_elements(By.CSS_SELECTOR, "text.mlabel.stuck")]
    assert stuck == ["▾ stuck (seq 4)"], stuck
    # Ranks that never issued the collective their peers wait in: an outlined hole.
    assert driver.find_elements(By.CSS_SELECTOR, "rect.absent")
    culprits = {c.get_attribute("data-ranks") for c in driver.find_elements(By.CSS_SELECTOR, "text.lane-label.culprit")}
    assert culprits == set(expand(driver.find_element(By.ID, "culprits").text))

    shot = tmp_path / "pg_order.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
    assert_clean_console(driver)


# --- Scale: 4, 64 and 512 ranks, uneven as a real partial hang --------------------------------

SCREEN = (1400, 1000)


def uneven_set(ranks: int, out: Path) -> Path:
    """An NCCL-format set (desync-synth: tensor- and data-parallel groups, Python frames) in
    which a scattered tenth of the ranks stalls: the waiting ranks' list, the culprits' groups
    and the groups table are as long and ragged as in a real partial hang."""
    import random
    stalled = sorted(random.Random(ranks).sample(range(ranks), max(2, ranks // 12)))
    dumps = out / f"uneven-{ranks}"
    proc = subprocess.run(
        [str(synth_bin()), "--out", str(dumps), "--ranks", str(ranks), "--entries", "400",
         "--history", "600", "--format", "pickle", "--frames", "--groups", "tp=8,dp",
         "--seed", str(ranks), "--fault", f"stall:ranks={'+'.join(map(str, stalled))},seq=30"],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dumps


LAYOUT = """
  var boxes = Array.from(document.querySelectorAll('text.mlabel')).map(function (t) {
    var r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, t.textContent];
  });
  var overlaps = [];
  for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
    var a = boxes[i], b = boxes[j];
    if (a[0] < b[2] - 0.5 && b[0] < a[2] - 0.5 && a[1] < b[3] - 0.5 && b[1] < a[3] - 0.5) overlaps.push([a[4], b[4]]);
  }
  var tl = document.getElementById('timeline').getBoundingClientRect().top + window.scrollY;
  var act = document.querySelector('#where, #code, #next-steps');
  var at = act ? act.getBoundingClientRect().top + window.scrollY : null;
  return {labels: boxes.length, overlaps: overlaps, timeline_top: tl, action_top: at,
          scroll_width: document.documentElement.scrollWidth, width: window.innerWidth, height: window.innerHeight};
"""


@pytest.mark.parametrize("ranks", [4, 64, 512])
def test_report_layout_holds_at_scale(driver, tmp_path, ranks):
    driver.set_window_size(*SCREEN)
    if ranks == 4:
        dumps, gloo = SCENARIO_DIR / "crash" / "dumps", True
    else:
        dumps, gloo = uneven_set(ranks, tmp_path), False
    html = tmp_path / f"report-{ranks}.html"
    exe = desync_bin()
    proc = subprocess.run([str(exe), "report", str(dumps), "-o", str(html)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stderr
    verdict = json.loads(subprocess.run([str(exe), "analyze", str(dumps), "--format", "json"],
                                        capture_output=True, text=True, timeout=300).stdout)
    driver.get(html.as_uri())
    sections = drawn_groups(driver)
    layout = driver.execute_script(LAYOUT)
    assert layout["labels"] >= 1, layout
    assert not layout["overlaps"], f"label boxes overlap: {layout['overlaps']}"
    if ranks > 24:
        # A long timeline (more lanes than a screen holds) comes after where the ranks are, the
        # code and the next steps: what to do next stays on the first screen (issue 46).
        assert layout["action_top"] is not None, layout
        assert layout["action_top"] < layout["height"], f"next steps below the first screen: {layout}"
        assert layout["action_top"] < layout["timeline_top"], f"timeline before the next steps: {layout}"
    else:
        assert layout["timeline_top"] < layout["height"], f"timeline starts below the first screen: {layout}"
    assert layout["scroll_width"] <= layout["width"], f"the page scrolls sideways: {layout}"
    assert all(progress_is_ordered(s) for s in sections), "lanes ordered by progress"

    # Rank search: a culprit's lane is marked and the count says where it was found.
    culprit = verdict["verdict"]["culprit_ranks"][0]
    box = driver.find_element(By.ID, "rank-search")
    box.send_keys(str(culprit))
    WebDriverWait(driver, 5).until(lambda d: d.find_elements(By.CSS_SELECTOR, "text.lane-label.found"))
    assert f"rank {culprit}:" in driver.find_element(By.ID, "rank-found").text

    # Time axis: lanes redraw on a time scale; Gloo's missing durations are shown as such.
    driver.find_element(By.ID, "axis").click()
    WebDriverWait(driver, 5).until(lambda d: d.find_elements(By.CSS_SELECTOR, "svg.cells.time"))
    unknown = driver.find_elements(By.CSS_SELECTOR, "rect.cell.dur-unknown")
    note = driver.find_element(By.ID, "axis-note").text
    if gloo:
        assert unknown and "length is unknown" in note, note
    else:
        assert "Gloo" not in note, note
    assert not driver.execute_script(LAYOUT)["overlaps"]

    shot = tmp_path / f"report-{ranks}.png"
    driver.execute_script("window.scrollTo(0, 0)")
    assert driver.save_screenshot(str(shot))
    print(f"screenshot: {shot}")
    assert_clean_console(driver)
