"""The run directory's one owner (docs/FORMATS.md): the names of its files (names.py), making
and naming run directories and the `latest` links (run_dirs.py), finding run and campaign
directories (find.py), writing any file whole or not at all (atomic.py), history.jsonl's writer
and exact reader (history.py), final.jsonl's writer (final_writer.py) and exact reader (final_reader.py),
test.json and its checker section (recorded_test.py), a run as test.json and results.json record
it, with the words every reader shows them in (record.py), and a campaign directory's plan and
outcomes (campaigns.py)."""
