"""agent_sandbox: abx's Python SDK, a thin layer over libabx (docs/python.md).

    from agent_sandbox import Sandbox
    with Sandbox.create(template="base") as sb:
        print(sb.commands.run("echo hi").stdout)
"""
from .errors import (AuthenticationError, CancelledError, ConfigError, InvalidArgumentError, LimitError,
                     NotFoundError, NotSupportedError, ProviderError, RuntimeFailure, SandboxError,
                     SandboxPermissionError, SandboxTimeoutError, StateError)
from .sandbox import (CommandHandle, CommandResult, Commands, EntryInfo, Execution, ExecutionError, Files, Logs,
                      Result, Sandbox, SandboxInfo, WriteInfo)
from .volume import Volume
from . import _native


def version() -> str:
    """libabx's version."""
    return _native.lib.abx_version().decode()


__all__ = ["Sandbox", "SandboxInfo", "Volume", "CommandResult", "CommandHandle", "Commands", "Files", "Execution",
           "EntryInfo", "WriteInfo", "Result", "Logs",
           "ExecutionError", "SandboxError", "InvalidArgumentError", "NotFoundError", "SandboxTimeoutError",
           "AuthenticationError", "SandboxPermissionError", "LimitError", "ProviderError", "StateError",
           "NotSupportedError", "ConfigError", "RuntimeFailure", "CancelledError", "version"]
