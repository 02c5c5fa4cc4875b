/* archive_extract.h: unpacking a plugin archive safely (lib/archive_extract.c). */
#ifndef ABX_ARCHIVE_EXTRACT_H
#define ABX_ARCHIVE_EXTRACT_H

#include <stddef.h>

/* Unpacks the tar archive (compressed or not) at archive_path into the
 * empty directory dest; 0, or -1 with the reason in why (and dest holding
 * what was unpacked before it: the caller removes it). */
int abx__archive_extract(const char *archive_path, const char *dest, char *why, size_t why_len);
/* The same for a template's root filesystem (docker export, .tar[.gz|.zst]):
 * owners and permissions kept (setuid and setgid bits dropped), absolute
 * symbolic links kept (they resolve inside the sandbox; nothing on the host
 * follows them), hard links within the tree, up to 64 GiB and a million
 * entries; absolute paths, "..", devices, fifos and sockets refused. */
int abx__archive_extract_rootfs(const char *archive_path, const char *dest, char *why, size_t why_len);

/* The same for one layer of an OCI image over dest (the layers below
 * already there): an entry replaces what is at its path (directories
 * merge), ".wh.NAME" removes NAME, ".wh..wh..opq" empties its directory. */
int abx__archive_extract_layer(const char *archive_path, const char *dest, char *why, size_t why_len);

#endif
