"""Fuzzing blkscope's readers: mutations (`mutate`), formats (`targets`), the campaign."""
