"""RULER's 13 tasks (NVIDIA/RULER), generated offline: NIAH (niah.py, haystack.py), variable tracking,
aggregation (cwe, fwe) and QA, sharing templates.py and the length fitting of common.py."""
