"""``python -m dotjson``: the same command line as ``dotjson`` (see :mod:`dotjson.tools.cli`)."""

import sys

from dotjson.tools.cli import main

sys.exit(main())
