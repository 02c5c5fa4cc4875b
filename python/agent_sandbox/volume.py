"""Volumes: named storage that outlives sandboxes (docs/volumes.md).

E2B's Python SDK shape (Volume.create, Volume.list, Volume.get_info,
Volume.destroy) over libabx's abx_volume_*; mount one with
Sandbox.create(volume_mounts={"/data": vol}) or volumes=["NAME:/path[:ro]"].
"""
import ctypes
import json
from typing import Any, Dict, List, Optional

from . import _native as n
from .errors import NotFoundError

_sig = n._sig
_sig("abx_volume_create", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint,
     ctypes.POINTER(ctypes.c_void_p), n.Err)
_sig("abx_volume_list", ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), n.Err)
_sig("abx_volume_inspect", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), n.Err)
_sig("abx_volume_remove", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, n.Err)


def _json(fn, *args) -> Any:
    out = ctypes.c_void_p()
    n.call(fn, *args, ctypes.byref(out))
    try:
        return json.loads(n.text_of(out))
    finally:
        n.lib.abx_free(out)


class Volume:
    """A volume of the client's tenant: volume_id, name, size_mb (0: a
    plain directory), created_at, in_use."""

    def __init__(self, info: Dict[str, Any]):
        self.volume_id: str = info.get("volume_id", "")
        self.name: str = info.get("name", "")
        self.size_mb: int = int(info.get("size_mb") or 0)
        self.created_at: Optional[str] = info.get("created_at")
        self.in_use: bool = bool(info.get("in_use"))

    def __repr__(self) -> str:
        return f"Volume(name={self.name!r}, volume_id={self.volume_id!r}, size_mb={self.size_mb})"

    @classmethod
    def create(cls, name: str, size_mb: int = 0, provider: Optional[str] = None,
               api_key: Optional[str] = None) -> "Volume":
        """Makes a volume; size_mb 0: a directory (root's) or 1024 MiB (a tenant's)."""
        return cls(_json(n.lib.abx_volume_create, n.client(provider, api_key), n.b(name), int(size_mb)))

    @classmethod
    def list(cls, provider: Optional[str] = None, api_key: Optional[str] = None) -> List["Volume"]:
        return [cls(v) for v in _json(n.lib.abx_volume_list, n.client(provider, api_key))]

    @classmethod
    def get_info(cls, name_or_id: str, provider: Optional[str] = None, api_key: Optional[str] = None) -> "Volume":
        return cls(_json(n.lib.abx_volume_inspect, n.client(provider, api_key), n.b(name_or_id)))

    connect = get_info

    @classmethod
    def destroy(cls, name_or_id: str, provider: Optional[str] = None, api_key: Optional[str] = None) -> bool:
        """Removes it and its files; False when there is no such volume.
        Raises StateError (E8034) while a sandbox mounts it."""
        try:
            n.call(n.lib.abx_volume_remove, n.client(provider, api_key), n.b(name_or_id))
        except NotFoundError:
            return False
        return True
