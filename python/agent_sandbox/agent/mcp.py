"""python -m agent_sandbox.agent.mcp: abx's MCP server, the same one `abx mcp
start` (STDIO) and `abx mcp serve` (Streamable HTTP, with --http ADDR:PORT)
run: this module finds the abx binary and becomes it (exec), it does not
reimplement the tools. The binary: ABX_BIN, else beside libabx.so, else
beside this package, else on PATH. Other arguments pass through to abx
(--template T, --provider P, --no-auth, --auth-token-file F, ...)."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def find_abx() -> str:
    env = os.environ.get("ABX_BIN")
    if env:
        return env
    candidates = []
    try:
        from .. import _native
        candidates.append(Path(_native.LIBRARY_PATH).resolve().parent / "abx")
    except ImportError:
        pass
    here = Path(__file__).resolve().parent.parent
    candidates += [here / "abx", here.parent.parent / "build" / "abx"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("abx")
    if found:
        return found
    sys.exit("agent_sandbox.agent.mcp: the abx binary was not found (set ABX_BIN to its path)")


def argv_for(args: list[str], abx: str) -> list[str]:
    if "-h" in args or "--help" in args:
        return [abx, "mcp", "--help"]
    rest, http = [], None
    i = 0
    while i < len(args):
        if args[i] == "--http" and i + 1 < len(args):
            http = args[i + 1]
            i += 2
            continue
        if args[i].startswith("--http="):
            http = args[i].split("=", 1)[1]
        else:
            rest.append(args[i])
        i += 1
    if http:
        return [abx, "mcp", "serve", "--listen", http, *rest]
    if any(a == "--listen" or a.startswith("--listen=") for a in rest):
        return [abx, "mcp", "serve", *rest]
    return [abx, "mcp", "start", *rest]


def main(args: list[str] | None = None) -> None:
    abx = find_abx()
    argv = argv_for(sys.argv[1:] if args is None else args, abx)
    sys.stdout.flush()
    os.execv(abx, argv)


if __name__ == "__main__":
    main()
