"""A failing run again and smaller (script.py: the nemesis ops a run recorded, as a scripted
schedule; rerun.py: a run's spec with a script, run again; shrink.py: delta debugging over
the script's fault actions and their timing). `fencepost replay` and `fencepost shrink`."""
