#!/usr/bin/env python3
"""Regenerates docs/errors.md from include/abx/abx_errors.def (run by hand;
tests/unit/test-errors.c fails when the two disagree)."""
import re, pathlib
root = pathlib.Path(__file__).resolve().parent.parent
src = (root / "include/abx/abx_errors.def").read_text()
rows = re.findall(r'ABX_ERR\((\w+),\s*(\d+),\s*"([^"]*)",\s*(\d+),\s*"([^"]*)",\s*"([^"]*)"\)', src)
out = ["# abx error codes", "",
       "Every failure abx reports carries one of these codes. Codes are only ever added,",
       "never renumbered. The CLI prints `abx: CODE: message (hint: ...)` (or, with",
       "`--json`, `{\"error\": {\"code\", \"category\", \"message\", \"hint\"}}` on stderr); MCP tool",
       "results carry `{error: {code, category, http_status, hint}}`. Hints are static:",
       "they never contain a value you passed, a path of the host, or a secret.",
       "Generated from `include/abx/abx_errors.def` by `scripts/gen-errors-md.py`.", "",
       "| code | name | category | HTTP | message | hint |",
       "| --- | --- | --- | --- | --- | --- |"]
for name, num, cat, http, msg, hint in rows:
    out.append(f"| E{num} | ABX_E{name} | {cat} | {http} | {msg} | {hint} |")
(root / "docs/errors.md").write_text("\n".join(out) + "\n")
