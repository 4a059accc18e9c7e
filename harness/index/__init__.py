"""The results folder at a glance (tree.py: every run and campaign under it, however deep;
page.py: the static results/index.html, filterable, that works from a copied folder with no
server). `fencepost serve` lists from tree.py too."""
