"""errors.py: SandboxError and one subclass per category of abx's error
codes (include/abx/abx_errors.def, docs/errors.md). Every failure of the SDK
is one of them, carrying the E8xxx code, its category and a hint; messages
are libabx's, which never carry a provider's raw body, a URL or a key."""
from __future__ import annotations


class SandboxError(Exception):
    """An abx error: code ("E8002"), number (8002), category, message, hint."""

    def __init__(self, message: str, code: str = "", number: int = 0, category: str = "", hint: str = ""):
        super().__init__(message)
        self.message = message
        self.code = code
        self.number = number
        self.category = category
        self.hint = hint

    def __str__(self):
        return f"{self.code}: {self.message}" + (f" (hint: {self.hint})" if self.hint else "")


class InvalidArgumentError(SandboxError):
    """validation: a bad argument, flag or name."""


class NotFoundError(SandboxError):
    """not_found: no such sandbox (another tenant's answers the same), file or task."""


class SandboxTimeoutError(SandboxError, TimeoutError):
    """timeout: the operation did not finish in time."""


class AuthenticationError(SandboxError):
    """auth: the provider refused the credentials."""


class SandboxPermissionError(SandboxError, PermissionError):
    """permission: not allowed (needs root, a read-only path, an unsafe home)."""


class LimitError(SandboxError):
    """limit: a resource limit or a rate limit was reached; too large."""


class ProviderError(SandboxError):
    """provider: the provider or its plugin failed or is unavailable."""


class StateError(SandboxError):
    """state: the sandbox is not running (or paused)."""


class NotSupportedError(SandboxError):
    """capability: the provider has no such operation."""


class ConfigError(SandboxError):
    """config: configuration is invalid."""


class RuntimeFailure(SandboxError):
    """runtime, host, internal, io, build: the sandbox or this host failed."""


class CancelledError(SandboxError):
    """cancelled: the caller cancelled the operation."""


_BY_CATEGORY = {
    "validation": InvalidArgumentError,
    "not_found": NotFoundError,
    "timeout": SandboxTimeoutError,
    "auth": AuthenticationError,
    "permission": SandboxPermissionError,
    "limit": LimitError,
    "provider": ProviderError,
    "state": StateError,
    "capability": NotSupportedError,
    "config": ConfigError,
    "cancelled": CancelledError,
}


def error_from(number: int, message: str, code: str, category: str, hint: str) -> SandboxError:
    cls = _BY_CATEGORY.get(category, RuntimeFailure)
    return cls(message, code=code or f"E{number}", number=number, category=category, hint=hint)


__all__ = ["SandboxError", "InvalidArgumentError", "NotFoundError", "SandboxTimeoutError", "AuthenticationError",
           "SandboxPermissionError", "LimitError", "ProviderError", "StateError", "NotSupportedError", "ConfigError",
           "RuntimeFailure", "CancelledError", "error_from"]
