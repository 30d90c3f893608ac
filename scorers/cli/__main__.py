"""``python -m scorers.cli`` (e.g. ``accelerate launch -m scorers.cli score ...``)."""
import sys

from . import main

sys.exit(main())
