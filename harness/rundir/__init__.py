"""The run directory's one owner (docs/FORMATS.md): the names of its files (names.py), making
and naming run directories and the `latest` links (store.py), finding run and campaign
directories (find.py), writing any file whole or not at all (atomic.py), the final.jsonl
writer (final.py), and a run as test.json and results.json record it (record.py)."""
