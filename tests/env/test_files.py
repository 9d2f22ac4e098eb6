"""The one atomic write (env.files): a failed write leaves the destination as it was and no
temporary file behind; a folder is swapped in whole."""

from __future__ import annotations

import pytest

from env.files import atomic_folder, atomic_path, atomic_write, is_temp, temp_path


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "a.json"
    atomic_write(target, "old")

    def half(f):
        f.write("ne")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        atomic_write(target, half, text=True)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.json"]
    assert atomic_write(target, b"new") == target and target.read_bytes() == b"new"
    assert is_temp(temp_path(target).name) and not is_temp(target.name)


def test_a_library_writing_by_name_goes_through_the_temporary_path(tmp_path):
    target = tmp_path / "sub" / "x.gif"
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent and is_temp(tmp.name)
        tmp.write_bytes(b"GIF89a")
        assert not target.exists()
    assert target.read_bytes() == b"GIF89a" and not tmp.exists()


def test_a_folder_is_swapped_in_whole_or_not_at_all(tmp_path):
    target = tmp_path / "report"
    with atomic_folder(target) as tmp:
        (tmp / "a.csv").write_text("1")
    with pytest.raises(ValueError), atomic_folder(target) as tmp:
        (tmp / "b.csv").write_text("2")
        raise ValueError("a figure failed")
    assert [p.name for p in target.iterdir()] == ["a.csv"]
    with atomic_folder(target) as tmp:
        (tmp / "b.csv").write_text("2")
    assert [p.name for p in target.iterdir()] == ["b.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
