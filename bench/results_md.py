"""Sections of bench/RESULTS.md that scripts other than summarize.py write: each lies between
``<!-- NAME begin -->`` and ``<!-- NAME end -->``, is replaced in place when written again, and
survives a new summary."""
import os
import platform
import re
import statistics
from pathlib import Path

RESULTS_MD = Path(__file__).parent / "RESULTS.md"
_BLOCK = re.compile(r"<!-- (\w+) begin -->.*?<!-- \1 end -->", re.S)


def markers(name: str) -> tuple:
    return f"<!-- {name} begin -->", f"<!-- {name} end -->"


def write_block(name: str, body: str, path: Path = RESULTS_MD) -> None:
    """Put ``body`` (markdown) in the block ``name`` of ``path``: in place, or at the end."""
    begin, end = markers(name)
    section = f"{begin}\n{body.strip()}\n{end}"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    if begin in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    path.write_text(text)


def blocks(path: Path = RESULTS_MD) -> list:
    """The marked blocks of ``path`` (whole, markers included), in order."""
    return [m.group(0) for m in _BLOCK.finditer(path.read_text())] if path.exists() else []


def machine() -> str:
    """The CPU model, its widest vector ISA and its core count, as every table names them."""
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), platform.processor())
    isa = "AVX-512" if "avx512f" in open("/proc/cpuinfo").read() else "AVX2"
    return f"{model} ({isa}), {os.cpu_count()} cores"


def mean_std(values: list) -> str:
    """``mean ± std`` of ``values`` (the mean alone for one, ``-`` for none), thousands grouped."""
    if not values:
        return "-"
    mean = statistics.mean(values)
    return f"{mean:,.0f} ± {statistics.stdev(values):,.0f}" if len(values) > 1 else f"{mean:,.0f}"


def cpu_of(machine_text: str) -> str:
    """A ``machine()`` string without its core count: ``AMD EPYC (AVX2)``."""
    return machine_text.rsplit(",", 1)[0]
