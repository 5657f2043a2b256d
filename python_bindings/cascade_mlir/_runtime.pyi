# The extension module cascade_mlir._runtime (python_bindings/src), for type
# checkers: its names are untyped here (its docstrings describe them).
from typing import Any

def __getattr__(name: str) -> Any: ...
