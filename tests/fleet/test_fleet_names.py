"""Host names and capture ids from traced machines can never leave their partition folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from blkscope.errors import InputFormatError, OptionError
from blkscope.fleet.fleet_folder import partition_dir
from blkscope.fleet.names import label, partition_value

FLEET = Path("/fleet")


@given(st.text(min_size=0, max_size=140))
def test_an_accepted_name_is_one_plain_folder_inside_the_fleet(name: str) -> None:
    try:
        partition_value("host", name)
    except OptionError:
        return
    folder = partition_dir(FLEET, name, name)
    assert folder.parent.parent == FLEET and folder.name == f"capture={name}"
    assert "/" not in name and "\\" not in name and ".." not in name and name.isprintable()
    assert not name.startswith((".", "-")) and "=" not in name and "%" not in name


@pytest.mark.parametrize("name", ["db-7", "web01.example.com", "10.0.0.7", "run_2024-05-01+1"])
def test_real_host_names_are_accepted(name: str) -> None:
    assert partition_value("host", name) == name


def test_a_capture_folder_whose_name_cannot_be_a_partition_is_named() -> None:
    with pytest.raises(InputFormatError) as caught:
        partition_value("capture", "a b", where="/captures/a b")
    assert str(caught.value) == (
        "/captures/a b: 'a b' cannot name a capture partition: use 1-128 letters, digits, '_', "
        "'.', ':', '+' or '-', not starting with '.' or '-' and without '..'"
    )


def test_labels() -> None:
    assert label("kernel=6.9") == ("kernel", "6.9")
    assert label("note=a=b <i>") == ("note", "a=b <i>")
    with pytest.raises(OptionError, match="is not KEY=VALUE with a plain KEY"):
        label("../x=1")
