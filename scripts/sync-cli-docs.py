#!/usr/bin/env python3
"""sync-cli-docs.py [ABX]: replaces the first code block of each
docs/cli/<verb>.md with that verb's current `abx <verb> --help` (a test
checks they agree)."""
import pathlib, subprocess, sys
root = pathlib.Path(__file__).resolve().parent.parent
abx = sys.argv[1] if len(sys.argv) > 1 else str(root / "build/abx")
for page in sorted((root / "docs/cli").glob("*.md")):
    if page.name == "README.md":
        continue
    help_text = subprocess.run([abx, page.stem, "--help"], capture_output=True, text=True).stdout.rstrip()
    text = page.read_text()
    start = text.index("```\n")
    end = text.index("\n```", start + 4)
    page.write_text(text[:start] + "```\n" + help_text + text[end:])
