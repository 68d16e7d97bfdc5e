"""`icml26 data list`: every dataset with its shape and availability, offline."""

import socket
import sys

import pytest
from icml26_core.cli import main
from icml26_core.datasets import list_datasets


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")


def test_data_list_shows_every_dataset_with_shape(capsys, wide):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    infos = list_datasets()
    for info in infos:
        assert info.name in out and info.shape in out
    assert f"{len(infos)} datasets, {len(infos)} available here" in out


def test_data_list_reports_a_missing_carrier(capsys, wide, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspiel", None)
    assert main(["data", "list", "--kind", "game"]) == 0
    out = capsys.readouterr().out
    assert "pip install 'icml26-core[games]'" in out
    assert "4 datasets, 0 available here" in out


def test_data_list_check_loads_each(capsys, wide):
    assert main(["data", "list", "--kind", "game", "--check"]) == 0
    assert capsys.readouterr().out.count("loaded in") == 4


def test_data_list_bad_kind(capsys):
    assert main(["data", "list", "--kind", "audio"]) == 2
    assert "kind must be one of" in capsys.readouterr().err
