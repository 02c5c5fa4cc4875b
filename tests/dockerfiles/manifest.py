#!/usr/bin/env python3
"""manifest.py: what a root filesystem holds, as one JSON object on stdout.

  manifest.py dir ROOT    a tree on disk (an abx template's rootfs)
  manifest.py tar -       a tar stream on stdin (`docker export` of a container)

Each path (relative, "./" stripped) maps to [type, mode, uid, gid, what]:
type one of f d l c b p s h; mode the permission bits (setuid, setgid
and sticky included); what a file's SHA-256, a link's target, a device's
"major,minor", else "". A hard link in a tar is reported as the file it
links to. Reads at most 4,000,000 entries; times are left out (the two
builders differ in them by nature).
"""
import hashlib
import json
import os
import stat
import sys
import tarfile

LIMIT = 4_000_000


def digest(f):
    h = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def from_dir(root):
    out = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(top, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            m = st.st_mode
            kind, what = "f", ""
            if stat.S_ISDIR(m):
                kind = "d"
            elif stat.S_ISLNK(m):
                kind, what = "l", os.readlink(full)
            elif stat.S_ISCHR(m) or stat.S_ISBLK(m):
                kind = "c" if stat.S_ISCHR(m) else "b"
                what = f"{os.major(st.st_rdev)},{os.minor(st.st_rdev)}"
            elif stat.S_ISFIFO(m):
                kind = "p"
            elif stat.S_ISSOCK(m):
                kind = "s"
            else:
                with open(full, "rb") as f:
                    what = digest(f)
            out[rel] = [kind, stat.S_IMODE(m), st.st_uid, st.st_gid, what]
            if len(out) > LIMIT:
                sys.exit("manifest.py: more than 4,000,000 entries")
    return out


def from_tar(stream):
    out = {}
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for info in tar:
            rel = os.path.normpath(info.name.removeprefix("./"))
            if rel in (".", ""):
                continue
            kind, what = "f", ""
            if info.isdir():
                kind = "d"
            elif info.issym():
                kind, what = "l", info.linkname
            elif info.islnk():
                linked = out.get(os.path.normpath(info.linkname.removeprefix("./")))
                kind, what = "f", linked[4] if linked else ""
            elif info.ischr() or info.isblk():
                kind = "c" if info.ischr() else "b"
                what = f"{info.devmajor},{info.devminor}"
            elif info.isfifo():
                kind = "p"
            else:
                what = digest(tar.extractfile(info))
            out[rel] = [kind, info.mode & 0o7777, info.uid, info.gid, what]
            if len(out) > LIMIT:
                sys.exit("manifest.py: more than 4,000,000 entries")
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("dir", "tar"):
        sys.exit(__doc__)
    got = from_dir(sys.argv[2]) if sys.argv[1] == "dir" else from_tar(sys.stdin.buffer)
    json.dump(got, sys.stdout, sort_keys=True, separators=(",", ":"))


if __name__ == "__main__":
    main()
