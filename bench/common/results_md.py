"""Sections of bench/results/RESULTS.md that scripts other than summarize.py write: each lies
between ``<!-- NAME begin -->`` and ``<!-- NAME end -->``, is replaced in place when written
again, and survives a new summary."""
import os
import platform
import re
import statistics
from pathlib import Path

from bench.common.paths import RESULTS

RESULTS_MD = RESULTS / "RESULTS.md"
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
    """The CPU model, its widest vector ISA with its bf16 products (AMX, else AVX512-BF16) and its
    core count, as every table names them: ``Intel(R) Xeon(R) Processor (AVX-512, AMX), 2
    cores``."""
    info = open("/proc/cpuinfo").read()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                  if line.startswith("model name")), platform.processor())
    isa = "AVX-512" if "avx512f" in info else "AVX2"
    bf16 = ", AMX" if "amx_bf16" in info else ", AVX512-BF16" if "avx512_bf16" in info else ""
    return f"{model} ({isa}{bf16}), {os.cpu_count()} cores"


def mean_std(values: list) -> str:
    """``mean ± std`` of ``values`` (the mean alone for one, ``-`` for none), thousands grouped."""
    if not values:
        return "-"
    mean = statistics.mean(values)
    return f"{mean:,.0f} ± {statistics.stdev(values):,.0f}" if len(values) > 1 else f"{mean:,.0f}"


def cpu_of(machine_text: str) -> str:
    """A ``machine()`` string without its core count and trademarks: ``AMD EPYC (AVX2)``,
    ``Intel Xeon (AVX-512, AMX)``."""
    return machine_text.rsplit(",", 1)[0].replace("(R)", "").replace(" Processor", "")
