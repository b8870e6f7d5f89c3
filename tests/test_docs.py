"""The documentation's code runs: every ```python block of README.md and of each page in docs/,
a page's blocks in order as one script in a fresh process (so what a page registers stays there),
in a temporary directory; and the getting-started page includes README.md's two commands."""
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
    """The page includes README.md's install section (one copy), which holds its first bash
    block: the two commands CI runs."""
    readme = (ROOT / "README.md").read_text()
    page = (ROOT / "docs" / "getting-started.md").read_text()
    section = re.search(r"<!-- --8<-- \[start:install\] -->\n(.*?)<!-- --8<-- \[end:install\] -->",
                        readme, flags=re.S)
    assert section and '--8<-- "README.md:install"' in page
    first_block = re.search(r"^```bash\n.*?^```$", readme, flags=re.M | re.S).group(0)
    assert first_block in section.group(1)


# flags the docs name that belong to other tools, or to the example variant that a page defines
OTHER_FLAGS = {"--benchmark-only": "pytest-benchmark", "--benchmark-json": "pytest-benchmark",
               "--dist": "pytest-xdist", "--strict": "mkdocs build", "--logdir": "tensorboard",
               "--port": "tensorboard, ray start", "--head": "ray start",
               "--delta": "the option of the variant docs/extending.md registers",
               "--nproc-per-node": "torchrun"}
HISTORY = {"docs/changelog.md"}  # names things as they were


def documented(pattern: str) -> list:
    """``(page, match)`` of ``pattern`` on README.md and every page but the changelog."""
    return [(str(p.relative_to(ROOT)), m) for p in PAGES
            if str(p.relative_to(ROOT)) not in HISTORY
            for m in re.findall(pattern, p.read_text())]


def command_line_flags() -> set:
    """Every flag of ``funcsac`` and its commands, and of the scripts in ``bench/`` (and its
    pytest options)."""
    import argparse

    from funcsac.driver.cli import build_parser

    def walk(parser):
        for action in parser._actions:
            yield from (o for o in action.option_strings if o.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)

    bench = {flag for script in (ROOT / "bench").rglob("*.py")
             for flag in re.findall(r"add_?(?:argument|option)\(\s*\"(--[a-z0-9-]+)\"",
                                     script.read_text())}
    return set(walk(build_parser())) | bench


def test_every_flag_the_docs_name_exists():
    known = command_line_flags() | set(OTHER_FLAGS)
    missing = [(page, flag + star) for page, (flag, star) in
               documented(r"(?<![\w-])(--[a-z][a-z0-9-]*)(\*?)")
               if not (any(k.startswith(flag) for k in known) if star else flag in known)]
    assert missing == []


def test_every_module_file_and_name_the_docs_name_exists():
    import importlib
    missing = [(page, path) for page, path in documented(
        r"(?<![\w/.-])((?:funcsac|bench|tests|docs|notebooks)/[\w./-]*\w)")
        if not (ROOT / path).exists()]
    for page, name in documented(r"(?<![\w/.-])(funcsac(?:\.[A-Za-z_]\w*)+)"):
        parts = name.split(".")
        for i in range(len(parts), 0, -1):  # the longest importable prefix, then its attributes
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ImportError:
                continue
        for attribute in parts[i:]:
            if not hasattr(obj, attribute):
                missing.append((page, name))
                break
            obj = getattr(obj, attribute)
    assert missing == []
