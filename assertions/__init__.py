"""Pure claim checkers: observed state (plain dataclasses) in, `Verdict` out. No I/O here."""

from assertions.verdict import Verdict, require

__all__ = ["Verdict", "require"]
