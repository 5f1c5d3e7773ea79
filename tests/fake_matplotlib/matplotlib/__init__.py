"""Stands in for a missing matplotlib: put this folder first on PYTHONPATH and the import fails."""

raise ImportError("No module named 'matplotlib' (stand-in for a machine without the plot extra)")
