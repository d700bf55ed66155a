"""What a sandboxed run returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Status = Literal["ok", "error", "timeout", "compile_error", "sandbox_error"]


@dataclass
class SandboxResult:
    """Outcome of one run: `ok` (exit 0), `error`, `timeout`, `compile_error` or `sandbox_error`."""

    status: Status
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    duration_s: float = 0.0
    message: str = ""  # one clear sentence: why it ended, when not plain success
    truncated: bool = False  # stdout or stderr went over the output cap
    compile_output: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # fetched files, when asked for

    @property
    def ok(self) -> bool:
        """True when the program ran and exited with code 0."""
        return self.status == "ok"

    def to_text(self, max_chars: int = 8000) -> str:
        """What a model should see: output, errors and why the run ended."""
        parts = []
        if self.compile_output and self.status == "compile_error":
            parts.append(f"compile errors:\n{self.compile_output}")
        if self.stdout:
            parts.append(self.stdout if not self.stderr else f"stdout:\n{self.stdout}")
        if self.stderr:
            parts.append(f"stderr:\n{self.stderr}")
        if self.status != "ok" and self.message:
            parts.append(f"[{self.message}]")
        if self.truncated:
            parts.append("[output truncated]")
        text = "\n".join(p.rstrip("\n") for p in parts) if parts else "(no output)"
        if len(text) > max_chars:
            half = max_chars // 2
            text = f"{text[:half]}\n[... {len(text) - max_chars} characters cut ...]\n{text[-half:]}"
        return text
