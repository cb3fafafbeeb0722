"""``python -m kubebench``."""

from .cli import main

main()
