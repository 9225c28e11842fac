"""Allocates memory until something gives."""
_hoard = []
while True:
    _hoard.append(bytearray(256 << 20))
