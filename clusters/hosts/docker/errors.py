"""What the docker SDK raises when a call fails, and a sentence a person can act on for each.

A daemon that does not answer surfaces as a requests ConnectionError, not as a docker
error, so the backend catches both (`DOCKER_ERRORS`) and words them with `explain`.
"""
from __future__ import annotations

import docker.errors
import requests.exceptions

DOCKER_ERRORS = (docker.errors.APIError, requests.exceptions.ConnectionError)


def explain(error: BaseException) -> str:
    if isinstance(error, requests.exceptions.ConnectionError):
        return (f"the Docker daemon does not answer ({error}); if it was restarted, the cluster's "
                "containers stopped with it: bring the cluster up again")
    return str(getattr(error, "explanation", None) or error)
