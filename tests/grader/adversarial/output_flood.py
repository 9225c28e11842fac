"""Floods standard output."""
import sys

_line = "x" * 1000 + "\n"
while True:
    sys.stdout.write(_line)
