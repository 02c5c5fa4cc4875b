"""bench_python.py: issue 14's figures, the Python SDK against the same
libabx calls made from C (build/bench-sandbox), in one run, alternating
blocks so that the machine's noise falls on both:
  - sandbox.commands.run("true") round trip (target <= 1.3x C's abx_sandbox_exec)
  - Sandbox.create() (then kill) against C's abx_sandbox_create
Usage: python3 bench/bench_python.py [build-dir]   (root, as the local provider needs)
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build").resolve()
os.environ["ABX_HOME"] = tempfile.mkdtemp(prefix="abx-bench-py-")
os.environ["ABX_LIBRARY"] = str(BUILD / "libabx.so.0")
os.environ.setdefault("ABX_PROVIDER", "local")
sys.path.insert(0, str(ROOT / "python"))
from agent_sandbox import Sandbox  # noqa: E402


def c_median(mode, n):
    out = subprocess.run([str(BUILD / "bench-sandbox"), mode, str(n)], capture_output=True, text=True, check=True)
    return float(re.search(r"median ([0-9.]+) ms", out.stdout).group(1))


def py_run(n):
    sb = Sandbox.create()
    try:
        for _ in range(20):
            sb.commands.run("true")
        t = []
        for _ in range(n):
            t0 = time.perf_counter()
            r = sb.commands.run("true")
            t.append((time.perf_counter() - t0) * 1000)
            assert r.exit_code == 0
        return statistics.median(t)
    finally:
        sb.kill()
        sb.close()


def py_create(n):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        sb = Sandbox.create()
        t.append((time.perf_counter() - t0) * 1000)
        sb.kill()
        sb.close()
    return statistics.median(t)


def main():
    c_run, p_run, c_new, p_new = [], [], [], []
    for _ in range(3):
        c_run.append(c_median("shell", 200))
        p_run.append(py_run(200))
        c_new.append(c_median("create", 30))
        p_new.append(py_create(30))
    cr, pr, cn, pn = (statistics.median(v) for v in (c_run, p_run, c_new, p_new))
    print(f"machine: {os.cpu_count()} cpu, {os.uname().release}, {time.strftime('%Y-%m-%d')}\n")
    print("| measure | n | figure | against |\n| --- | --- | --- | --- |")
    print(f"| commands.run(\"true\") from Python | 600 | median {pr:.3f} ms | |")
    print(f"| abx_sandbox_exec(\"true\") from C | 600 | median {cr:.3f} ms | Python {pr / cr:.2f}x C "
          f"(target <= 1.3x: {'met' if pr / cr <= 1.3 else 'missed'}) |")
    print(f"| Sandbox.create() + kill from Python | 90 | median create {pn:.2f} ms | |")
    print(f"| abx_sandbox_create from C | 90 | median create {cn:.2f} ms | Python {pn / cn:.2f}x C |")


if __name__ == "__main__":
    main()
