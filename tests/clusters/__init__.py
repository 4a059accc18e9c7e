"""Tests of clusters/: the host backends (process, netns, docker, ssh) through the host contract,
the systems' options and releases, lazy disks, and what the rest of the project may import of
clusters."""
