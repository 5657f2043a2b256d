"""The FlashInfer features cascade_mlir does not implement, as one error
type whose messages name the limitation (docs/python.md, "FlashInfer
parity"), and the checks of the arguments that ask for them."""

from typing import Any

__all__ = ["UnsupportedFeatureError", "MULTI_ITEM_ARGS", "reject_multi_item_scoring"]


class UnsupportedFeatureError(ValueError):
    """A FlashInfer feature cascade_mlir does not implement; the message
    names it and the limitation documented in docs/python.md ("FlashInfer
    parity")."""


#: Prefill plan()'s multi-item scoring arguments (FlashInfer 0.5.3) and
#: their defaults.
MULTI_ITEM_ARGS = (("prefix_len_ptr", None), ("token_pos_in_items_ptr", None),
                   ("token_pos_in_items_len", 0), ("max_item_len_ptr", None))


def reject_multi_item_scoring(prefix_len_ptr: Any = None, token_pos_in_items_ptr: Any = None,
                              token_pos_in_items_len: int = 0,
                              max_item_len_ptr: Any = None) -> None:
    """FlashInfer's multi-item scoring (one prompt, several items that each
    see the prefix and themselves only) is not implemented: a clear error."""
    given = [n for n, v in (("prefix_len_ptr", prefix_len_ptr),
                            ("token_pos_in_items_ptr", token_pos_in_items_ptr),
                            ("max_item_len_ptr", max_item_len_ptr)) if v is not None]
    if token_pos_in_items_len:
        given.append("token_pos_in_items_len")
    if given:
        raise UnsupportedFeatureError(
            f"{', '.join(given)}: multi-item scoring is not supported by cascade_mlir "
            "(docs/python.md, FlashInfer parity: run the items as requests of a "
            "cascade whose shared level is the prompt)")
