"""The documentation's code runs: every ```python block of README.md and of each page in docs/,
a page's blocks in order as one script in a fresh process (so what a page registers stays there),
in a temporary directory; and the getting-started page shows README.md's two commands."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path, language: str) -> list:
    return re.findall(rf"^```{language}\n(.*?)^```$", path.read_text(), flags=re.M | re.S)


# pages whose examples take minutes run with the slow tests, saying why
SLOW = {"docs/compiling.md": "a cold ahead-of-time compile of the update, a minute or two"}


@pytest.mark.parametrize("page", [
    pytest.param(p, marks=[pytest.mark.slow] if str(p.relative_to(ROOT)) in SLOW else [],
                 id=str(p.relative_to(ROOT)))
    for p in PAGES if blocks(p, "python")])
def test_code_examples_run(page, tmp_path):
    script = tmp_path / "page.py"
    script.write_text("\n".join(blocks(page, "python")))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def test_getting_started_shows_the_readmes_commands():
    readme, page = ROOT / "README.md", ROOT / "docs" / "getting-started.md"
    assert blocks(page, "bash")[0] == blocks(readme, "bash")[0]
