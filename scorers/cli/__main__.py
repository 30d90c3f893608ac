"""``python -m scorers.cli`` (e.g. ``accelerate launch -m scorers.cli score ...``)."""
import sys

from scorers.cli import main

sys.exit(main())
