"""_native.py: libabx.so through ctypes: finding it, its structs and its
functions' signatures, and turning an abx_error into a SandboxError.

Owns nothing else: every handle libabx returns is wrapped and freed by
sandbox.py. ctypes.CDLL releases the GIL for the length of each call, so
blocking calls (a command, a file transfer) let other threads run.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import threading
from typing import Optional
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char, c_char_p, c_double, c_int, c_longlong,
                    c_size_t, c_uint, c_ulonglong, c_void_p)
from pathlib import Path

from .errors import error_from

_here = Path(__file__).resolve().parent


def _candidates():
    env = os.environ.get("ABX_LIBRARY")
    if env:
        yield env
    for name in ("libabx.so.0", "libabx.so"):
        yield str(_here / name)  # installed beside the package
    for build in ("build", "build-asan"):  # a checkout: python/ beside build/
        yield str(_here.parent.parent / build / "libabx.so.0")
    found = ctypes.util.find_library("abx")
    if found:
        yield found
    yield "libabx.so.0"


def _load():
    errors = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("libabx.so not found: set ABX_LIBRARY to its path, install it beside the agent_sandbox "
                      "package, or on the system's library path (" + "; ".join(errors[-3:]) + ")")


lib, LIBRARY_PATH = _load()

# ---- structs (include/abx/abx.h, field for field) ---------------------------

OUTPUT_FN = CFUNCTYPE(None, c_void_p, c_size_t, c_void_p)
CANCEL_FN = CFUNCTYPE(c_bool, c_void_p)
StrArray = POINTER(c_char_p)


class ClientOptions(Structure):
    _fields_ = [("provider", c_char_p), ("cli_provider", c_char_p), ("tenant", c_char_p), ("all_tenants", c_bool), ("reserved", c_void_p * 2)]


class CreateOptions(Structure):
    _fields_ = [("template_id", c_char_p), ("timeout_s", c_uint), ("envs", StrArray), ("metadata", StrArray),
                ("cpu_count", c_uint), ("memory_mb", c_uint), ("options", StrArray), ("network", c_char_p),
                ("allow_out", StrArray), ("deny_out", StrArray), ("notes_json", c_char_p),
                ("pause_on_timeout", c_bool), ("volumes", StrArray), ("persistent", c_bool),
                ("pause_drops_memory", c_bool)]


class SandboxInfo(Structure):
    _fields_ = [("sandbox_id", c_char * 96), ("template_id", c_char * 64), ("status", c_char * 16),
                ("started_at", c_longlong), ("end_at", c_longlong), ("cpu_count", c_uint), ("memory_mb", c_uint),
                ("disk_size_mb", c_uint), ("metadata_json", c_void_p), ("env_names_json", c_void_p),
                ("network_json", c_void_p), ("volumes_json", c_void_p), ("persistent", c_bool), ("boots", c_uint),
                ("resumed_from", c_char * 8)]


class ExecOptions(Structure):
    _fields_ = [("cwd", c_char_p), ("user", c_char_p), ("envs", StrArray), ("timeout_s", c_uint),
                ("on_stdout", OUTPUT_FN), ("on_stderr", OUTPUT_FN), ("userdata", c_void_p), ("keep_output", c_bool),
                ("tag", c_char_p), ("should_cancel", CANCEL_FN), ("with_stdin", c_bool), ("stdin_fd", c_int),
                ("save_output_after", c_ulonglong), ("pty", c_bool), ("pty_fd", c_int), ("default_cwd", c_char_p),
                ("reserved", c_void_p * 3)]


class ExecResult(Structure):
    _fields_ = [("exit_code", c_int), ("timed_out", c_bool), ("stdout_data", c_void_p), ("stdout_len", c_size_t),
                ("stderr_data", c_void_p), ("stderr_len", c_size_t), ("stdout_total", c_ulonglong),
                ("stderr_total", c_ulonglong), ("stdout_cut", c_size_t), ("stderr_cut", c_size_t),
                ("stdout_path", c_char * 64), ("stderr_path", c_char * 64)]


class ProcessOutput(Structure):
    _fields_ = [("pid", c_int), ("running", c_bool), ("exit_code", c_int), ("stdout_data", c_void_p),
                ("stdout_len", c_size_t), ("stderr_data", c_void_p), ("stderr_len", c_size_t),
                ("stdout_offset", c_ulonglong), ("stderr_offset", c_ulonglong), ("truncated", c_bool)]


class CodeOptions(Structure):
    _fields_ = [("language", c_char_p), ("context_id", c_char_p), ("cwd", c_char_p), ("timeout_s", c_uint),
                ("fresh", c_bool), ("envs", StrArray), ("save_output_after", c_ulonglong),
                ("should_cancel", CANCEL_FN), ("userdata", c_void_p), ("reserved", c_void_p * 4)]


class CodeResult(Structure):
    _fields_ = [("exit_code", c_int), ("timed_out", c_bool), ("kernel_died", c_bool), ("state_reset", c_bool),
                ("state_reset_reason", c_char * 200), ("execution_count", c_int), ("context_id", c_char * 40),
                ("stdout_data", c_void_p), ("stdout_len", c_size_t), ("stdout_cut", c_size_t),
                ("stdout_total", c_ulonglong), ("stdout_path", c_char * 96), ("stderr_data", c_void_p),
                ("stderr_len", c_size_t), ("stderr_cut", c_size_t), ("stderr_total", c_ulonglong),
                ("stderr_path", c_char * 96), ("error_name", c_void_p), ("error_value", c_void_p),
                ("traceback", c_void_p), ("text", c_void_p), ("results_json", c_void_p), ("files_json", c_void_p)]


class Metrics(Structure):
    _fields_ = [("cpu_count", c_uint), ("cpu_used_pct", c_double), ("mem_used", c_ulonglong),
                ("mem_total", c_ulonglong), ("disk_used", c_ulonglong), ("disk_total", c_ulonglong),
                ("reserved", c_void_p * 4)]


# ---- signatures ---------------------------------------------------------------

Err = POINTER(c_void_p)  # abx_error **


def _sig(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


_sig("abx_error_code", c_int, c_void_p)
_sig("abx_error_message", c_char_p, c_void_p)
_sig("abx_error_free", None, c_void_p)
_sig("abx_err_name", c_char_p, c_int)
_sig("abx_err_hint", c_char_p, c_int)
_sig("abx_err_category", c_char_p, c_int)
_sig("abx_free", None, c_void_p)
_sig("abx_version", c_char_p)
_sig("abx_client_new", c_int, POINTER(ClientOptions), POINTER(c_void_p), Err)
_sig("abx_client_free", None, c_void_p)
_sig("abx_client_provider", c_char_p, c_void_p)
_sig("abx_sandbox_create", c_int, c_void_p, POINTER(CreateOptions), POINTER(c_void_p), Err)
_sig("abx_sandbox_connect", c_int, c_void_p, c_char_p, POINTER(c_void_p), Err)
_sig("abx_sandbox_free", None, c_void_p)
_sig("abx_sandbox_id", c_char_p, c_void_p)
_sig("abx_sandbox_info_clear", None, POINTER(SandboxInfo))
_sig("abx_sandbox_get_info", c_int, c_void_p, POINTER(SandboxInfo), Err)
_sig("abx_get_info_by_id", c_int, c_void_p, c_char_p, POINTER(SandboxInfo), Err)
_sig("abx_list", c_int, c_void_p, c_char_p, c_uint, c_uint, POINTER(POINTER(SandboxInfo)), POINTER(c_size_t), Err)
_sig("abx_sandbox_info_list_free", None, POINTER(SandboxInfo), c_size_t)
_sig("abx_sandbox_set_timeout", c_int, c_void_p, c_uint, Err)
_sig("abx_set_timeout_by_id", c_int, c_void_p, c_char_p, c_uint, Err)
_sig("abx_sandbox_kill", c_int, c_void_p, Err)
_sig("abx_sandbox_pause", c_int, c_void_p, Err)
_sig("abx_sandbox_snapshot", c_int, c_void_p, c_char_p, POINTER(c_void_p), Err)
_sig("abx_snapshot_list", c_int, c_void_p, c_char_p, POINTER(c_void_p), Err)
_sig("abx_snapshot_remove", c_int, c_void_p, c_char_p, Err)
_sig("abx_sandbox_fork", c_int, c_void_p, c_void_p, c_uint, POINTER(CreateOptions), POINTER(POINTER(c_void_p)), Err)
_sig("abx_sandbox_resume", c_int, c_void_p, c_uint, Err)
_sig("abx_kill_by_id", c_int, c_void_p, c_char_p, Err)
_sig("abx_sandbox_get_metrics", c_int, c_void_p, POINTER(Metrics), Err)
_sig("abx_sandbox_exec", c_int, c_void_p, c_char_p, POINTER(ExecOptions), POINTER(ExecResult), Err)
_sig("abx_sandbox_exec_argv", c_int, c_void_p, StrArray, POINTER(ExecOptions), POINTER(ExecResult), Err)
_sig("abx_exec_result_clear", None, POINTER(ExecResult))
_sig("abx_sandbox_start_background", c_int, c_void_p, c_char_p, POINTER(ExecOptions), POINTER(c_int), Err)
_sig("abx_sandbox_read_output", c_int, c_void_p, c_int, c_ulonglong, c_ulonglong, c_uint, POINTER(ProcessOutput),
     Err)
_sig("abx_process_output_clear", None, POINTER(ProcessOutput))
_sig("abx_sandbox_signal", c_int, c_void_p, c_int, c_int, Err)
_sig("abx_sandbox_send_stdin", c_int, c_void_p, c_int, c_void_p, c_size_t, Err)
_sig("abx_sandbox_close_stdin", c_int, c_void_p, c_int, Err)
_sig("abx_sandbox_has_code_interpreter", c_bool, c_void_p)
_sig("abx_sandbox_run_code", c_int, c_void_p, c_char_p, POINTER(CodeOptions), POINTER(CodeResult), Err)
_sig("abx_code_result_clear", None, POINTER(CodeResult))
_sig("abx_sandbox_write_file", c_int, c_void_p, c_char_p, c_void_p, c_size_t, c_char_p, Err)
_sig("abx_sandbox_read_file", c_int, c_void_p, c_char_p, c_char_p, c_size_t, POINTER(c_void_p), POINTER(c_size_t),
     Err)
_sig("abx_sandbox_list_files", c_int, c_void_p, c_char_p, c_uint, c_char_p, POINTER(c_void_p), Err)
_sig("abx_sandbox_stat", c_int, c_void_p, c_char_p, c_char_p, POINTER(c_void_p), Err)
_sig("abx_sandbox_mkdir", c_int, c_void_p, c_char_p, c_char_p, POINTER(c_bool), Err)
_sig("abx_sandbox_remove", c_int, c_void_p, c_char_p, c_char_p, Err)
_sig("abx_sandbox_move", c_int, c_void_p, c_char_p, c_char_p, c_char_p, Err)
_sig("abx_sandbox_port_url", c_int, c_void_p, c_uint, POINTER(c_char_p), Err)


# ---- calls ----------------------------------------------------------------------


def b(s):
    """str -> bytes for a const char * (None stays NULL)."""
    return None if s is None else s.encode() if isinstance(s, str) else s


def text_of(ptr, length=None):
    """A libabx char * (not freed here) as str; invalid UTF-8 replaced."""
    if not ptr:
        return ""
    raw = ctypes.string_at(ptr, length) if length is not None else ctypes.string_at(ptr)
    return raw.decode("utf-8", "replace")


class StrList:
    """A NULL-terminated char *const * that keeps its strings alive."""

    def __init__(self, items):
        self._keep = [b(x) for x in items]
        self.array = (c_char_p * (len(self._keep) + 1))(*self._keep, None)

    @classmethod
    def of(cls, items):
        return cls(list(items)).array if items else None


def pairs(mapping):
    return [f"{k}={v}" for k, v in (mapping or {}).items()]


def error(number: int, message: str, hint: Optional[str] = None):
    """The SandboxError of abx error number (its name, category and, unless given, hint from libabx)."""
    return error_from(number, message, (lib.abx_err_name(number) or b"").decode(),
                      (lib.abx_err_category(number) or b"").decode(),
                      hint if hint is not None else (lib.abx_err_hint(number) or b"").decode())


def call(fn, *args):
    """Calls a libabx function whose last argument is abx_error **; raises
    the error as a SandboxError (its code, category and hint) on failure."""
    err = c_void_p()
    rc = fn(*args, ctypes.byref(err))
    if rc < 0:
        code = lib.abx_error_code(err) if err.value else -rc
        message = (lib.abx_error_message(err) or b"").decode("utf-8", "replace") if err.value else ""
        if err.value:
            lib.abx_error_free(err)
        raise error_from(code, message, (lib.abx_err_name(code) or b"").decode(),
                         (lib.abx_err_category(code) or b"").decode(), (lib.abx_err_hint(code) or b"").decode())
    return rc


_clients = {}
_clients_lock = threading.Lock()


def client(provider=None, api_key=None):
    """One libabx client per provider (resolved as the CLI does when None)
    and API key, shared by every thread; freed when the interpreter exits.
    An api_key is the provider's key: ABX_SANDBOX_API_KEY while the client
    is made (E2B-protocol providers read it then)."""
    key = (provider or "", hashlib.sha256(api_key.encode()).hexdigest() if api_key else "")
    with _clients_lock:
        c = _clients.get(key)
        if c is None:
            saved = os.environ.get("ABX_SANDBOX_API_KEY")
            if api_key:
                os.environ["ABX_SANDBOX_API_KEY"] = api_key
            try:
                opts = ClientOptions(provider=b(provider))
                out = c_void_p()
                call(lib.abx_client_new, ctypes.byref(opts), ctypes.byref(out))
            finally:
                if api_key and saved is None:
                    os.environ.pop("ABX_SANDBOX_API_KEY", None)
                elif api_key:
                    os.environ["ABX_SANDBOX_API_KEY"] = saved
            c = _clients[key] = out
        return c


def _free_clients():
    with _clients_lock:
        for c in _clients.values():
            lib.abx_client_free(c)
        _clients.clear()


import atexit  # noqa: E402

atexit.register(_free_clients)
