"""``python -m accountant`` runs the command line."""

import sys

from accountant.cli import main

sys.exit(main())
