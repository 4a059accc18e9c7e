"""What a run records it was made with, asked of the things themselves."""
from __future__ import annotations

import re
import shutil

import confluent_kafka
import pytest

from fencepost.harness.provenance import client_versions, fencepost_version, history_reader, java_version, versions


def test_versions_name_fencepost_python_and_the_client_library_as_installed():
    found = versions()
    assert found["fencepost"] == fencepost_version() and re.fullmatch(r"\d+\.\d+\.\d+.*", found["fencepost"])
    assert re.fullmatch(r"3\.\d+\.\d+", found["python"])
    assert found["confluent_kafka"] == confluent_kafka.version() and found["confluent_kafka"].count(".") == 2
    assert found["librdkafka"] == confluent_kafka.libversion()[0]
    assert "java" not in found


def test_client_versions_are_strings_of_dotted_numbers():
    for name, value in client_versions().items():
        assert re.fullmatch(r"\d+\.\d+\.\d+.*", value), (name, value)


@pytest.mark.integration
def test_java_version_is_what_java_says():
    if shutil.which("java") is None:
        pytest.skip("no java on PATH (scripts/provision installs one)")
    version = java_version()
    assert version and re.match(r"\d+", version)
    assert versions(java=True)["java"] == version


def test_java_version_of_a_missing_program_is_none(tmp_path):
    assert java_version(str(tmp_path / "no-java")) is None


def test_the_history_reader_is_named():
    assert history_reader().startswith(("C reader", "Python readers"))
