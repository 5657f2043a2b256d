"""The package imports, and in a compiler build the compiler module loads
(an unresolved symbol there would otherwise only show as skipped tests)."""
import os

import cascade_mlir as cm


def test_runtime_module_present():
    assert hasattr(cm.runtime, "plan") and hasattr(cm.runtime, "ref_attention")


def test_compiler_module_loads_when_built():
    if os.environ.get("CASCADE_EXPECT_COMPILER") == "1":
        assert cm.compiler is not None, f"compiler module failed to import: {cm.compiler_import_error}"
