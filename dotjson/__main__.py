"""``python -m dotjson``: the same command line as ``dotjson`` (see :mod:`dotjson.cli`)."""

import sys

from dotjson.cli import main

sys.exit(main())
