"""``python -m accountant`` runs the command line."""

import sys

from accountant.report.cli import main

sys.exit(main())
